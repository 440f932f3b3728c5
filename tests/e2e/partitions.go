package e2e

import (
	"context"
	"net/http"
	"testing"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// WithPartitions creates a partitioned queue of n partitions, with the CONSUMER_GROUPS capability and its primary
// (MESSAGE) group disabled unless primaryEnabled.
func WithPartitions(n int, primaryEnabled bool) QueueOption {
	return func(d *sdk.CreateQueueDetails) {
		d.PartitionCount = &n
		WithConsumerGroups(primaryEnabled)(d)
	}
}

// ByPartition creates a consumer group with loadBalancing PARTITION.
func ByPartition() GroupOption {
	return func(d *sdk.CreateConsumerGroupDetails) {
		lb := sdk.CreateConsumerGroupDetailsLoadBalancingPARTITION
		d.LoadBalancing = &lb
	}
}

// Keyed is a message with a partitionKey.
func Keyed(content, key string) sdk.PutMessagesDetailsEntry {
	return sdk.PutMessagesDetailsEntry{Content: content, Metadata: &sdk.MessageMetadata{PartitionKey: &key}}
}

// TryReadPartitions calls GetPartitionMessages as consumer.
func (c *Client) TryReadPartitions(queueID, group, consumer string, limit, timeout int) (*sdk.GetPartitionMessagesResponse, error) {
	p := &sdk.GetPartitionMessagesParams{ConsumerGroupId: &group, Limit: &limit, TimeoutInSeconds: &timeout}
	if consumer != "" {
		p.XFerryConsumerId = &consumer
	}
	return c.GetPartitionMessagesWithResponse(context.Background(), queueID, p)
}

// ReadPartitions calls GetPartitionMessages as consumer and requires the 200.
func (c *Client) ReadPartitions(t testing.TB, queueID, group, consumer string, limit, timeout int) sdk.PartitionMessages {
	t.Helper()
	resp, err := c.TryReadPartitions(queueID, group, consumer, limit, timeout)
	RequireStatus(t, resp, err, http.StatusOK)
	return *resp.JSON200
}

// TryCommit commits offsets as consumer.
func (c *Client) TryCommit(queueID, group, consumer string, offsets ...sdk.PartitionOffset) (*sdk.CommitPartitionOffsetsResponse, error) {
	return c.CommitPartitionOffsetsWithResponse(context.Background(), queueID,
		&sdk.CommitPartitionOffsetsParams{ConsumerGroupId: &group, XFerryConsumerId: &consumer},
		sdk.CommitPartitionOffsetsDetails{Offsets: offsets})
}

// CommitRead commits, per partition, the last offset of the messages read, and requires the 204.
func (c *Client) CommitRead(t testing.TB, queueID, group, consumer string, read []sdk.PartitionMessage) {
	t.Helper()
	if len(read) == 0 {
		return
	}
	resp, err := c.TryCommit(queueID, group, consumer, LastOffsets(read)...)
	RequireStatus(t, resp, err, http.StatusNoContent)
}

// LastOffsets is, per partition (in the order first seen), the last offset of the messages read, with its generation.
func LastOffsets(read []sdk.PartitionMessage) []sdk.PartitionOffset {
	var out []sdk.PartitionOffset
	at := map[int]int{}
	for _, m := range read {
		i, ok := at[m.Partition]
		if !ok {
			at[m.Partition] = len(out)
			out = append(out, sdk.PartitionOffset{Partition: m.Partition})
			i = len(out) - 1
		}
		out[i].Offset, out[i].Generation = m.Offset, m.Generation
	}
	return out
}

// Owned lists the partitions of a read.
func Owned(r sdk.PartitionMessages) []int {
	out := []int{}
	for _, p := range r.Partitions {
		out = append(out, p.Partition)
	}
	return out
}

// Seek moves a PARTITION group's offsets and requires the 200.
func (c *Client) Seek(t testing.TB, queueID, group string, d sdk.SeekPartitionsDetails) sdk.SeekPartitionsResult {
	t.Helper()
	resp, err := c.SeekPartitionsWithResponse(context.Background(), queueID, &sdk.SeekPartitionsParams{ConsumerGroupId: &group}, d)
	RequireStatus(t, resp, err, http.StatusOK)
	return *resp.JSON200
}

// GroupConsumers lists the consumers of one consumer group.
func (c *Client) GroupConsumers(t testing.TB, queueID, group string) []sdk.Consumer {
	t.Helper()
	return c.consumers(t, queueID, &sdk.ListConsumersParams{ConsumerGroupId: &group}).Items
}

// LeaveGroup removes a consumer of a consumer group (DeleteConsumer) and requires the 204.
func (c *Client) LeaveGroup(t testing.TB, queueID, group, consumer string) {
	t.Helper()
	resp, err := c.DeleteConsumerWithResponse(context.Background(), queueID, consumer, &sdk.DeleteConsumerParams{ConsumerGroupId: &group})
	RequireStatus(t, resp, err, http.StatusNoContent)
}
