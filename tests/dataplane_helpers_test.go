package tests

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// queueOpts are CreateQueue settings for data-plane tests.
type queueOpts func(*sdk.CreateQueueDetails)

func withDLQ(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.DeadLetterQueueDeliveryCount = &n }
}
func withVisibility(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.VisibilityInSeconds = &n }
}
func withTimeout(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.TimeoutInSeconds = &n }
}
func withRetention(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.RetentionInSeconds = &n }
}
func withDedup(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.DeduplicationWindowInSeconds = &n }
}
func withMaxSize(n int64) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.MaxSizeInBytes = &n }
}
func withChannelLimit(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.ChannelConsumptionLimit = &n }
}

func createQueue(t *testing.T, c *sdk.ClientWithResponses, compartmentID string, opts ...queueOpts) string {
	t.Helper()
	d := sdk.CreateQueueDetails{CompartmentId: compartmentID, DisplayName: "q-" + strconv.Itoa(len(t.Name()))}
	for _, o := range opts {
		o(&d)
	}
	resp, err := c.CreateQueueWithResponse(context.Background(), &sdk.CreateQueueParams{}, d)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200.Id
}

func put(t *testing.T, c *sdk.ClientWithResponses, queueID string, entries ...sdk.PutMessagesDetailsEntry) []sdk.PutMessagesResultEntry {
	t.Helper()
	resp, err := c.PutMessagesWithResponse(context.Background(), queueID, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: entries})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Len(t, resp.JSON200.Messages, len(entries))
	return resp.JSON200.Messages
}

func msg(content string) sdk.PutMessagesDetailsEntry {
	return sdk.PutMessagesDetailsEntry{Content: content}
}

func msgOn(content, channel string) sdk.PutMessagesDetailsEntry {
	return sdk.PutMessagesDetailsEntry{Content: content, Metadata: &sdk.MessageMetadata{ChannelId: &channel}}
}

type getOpts func(*sdk.GetMessagesParams)

func limit(n int) getOpts            { return func(p *sdk.GetMessagesParams) { p.Limit = &n } }
func visibility(n int) getOpts       { return func(p *sdk.GetMessagesParams) { p.VisibilityInSeconds = &n } }
func timeout(n int) getOpts          { return func(p *sdk.GetMessagesParams) { p.TimeoutInSeconds = &n } }
func channelFilter(f string) getOpts { return func(p *sdk.GetMessagesParams) { p.ChannelFilter = &f } }
func fromDLQ() getOpts               { return func(p *sdk.GetMessagesParams) { t := true; p.Dlq = &t } }

func get(t *testing.T, c *sdk.ClientWithResponses, queueID string, opts ...getOpts) []sdk.GetMessage {
	t.Helper()
	zero := 0
	p := &sdk.GetMessagesParams{TimeoutInSeconds: &zero}
	for _, o := range opts {
		o(p)
	}
	resp, err := c.GetMessagesWithResponse(context.Background(), queueID, p)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200.Messages
}

func stats(t *testing.T, c *sdk.ClientWithResponses, queueID string) *sdk.QueueStats {
	t.Helper()
	resp, err := c.GetStatsWithResponse(context.Background(), queueID, &sdk.GetStatsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200
}
