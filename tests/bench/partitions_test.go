package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
)

// Queue-based load balancing against message-based consumption on the same server and database.
const (
	partitionsBenchRounds    = 3
	partitionsBenchMessages  = 3000 // per round
	partitionsBenchConsumers = 4
	partitionsBenchBatch     = 100 // a partition read, committed once per batch
	messageBenchBatch        = 32  // GetMessages' largest batch, acknowledged with one DeleteMessages
)

// BenchmarkPartitions runs the ferry binary (fsync on) and drains the same backlog (3,000 messages of 256 bytes) twice with 4 consumers: from a plain
// queue, message by message (GetMessages of 32 with a lease, DeleteMessages of what came), and from a partitioned
// queue of 4 partitions by a PARTITION group (reads of 100, one commit per read: no lease, no delete). The two
// alternate for 3 rounds and the ratio is the median of the rounds' (the machine's load changes less within a
// round). It then measures the rebalance after a consumer leaves: the time from its DeleteConsumer until another
// consumer, waiting in a long poll, receives the messages of the partition it left. The last line is
// machine-readable.
func BenchmarkPartitions(b *testing.B) {
	n := startNode(b) // the real binary on its own PostgreSQL, fsync on: durability costs what it costs in production
	c, tenancyID := e2e.NewClient(b, n.base, n.token), n.tenancy
	ctx := context.Background()
	content := strings.Repeat("x", 256)
	fill := func(queueID string) {
		batch := make([]sdk.PutMessagesDetailsEntry, 20)
		for i := 0; i < partitionsBenchMessages; i += len(batch) {
			for k := range batch {
				key := fmt.Sprintf("source-%d", (i+k)%64)
				batch[k] = sdk.PutMessagesDetailsEntry{Content: content, Metadata: &sdk.MessageMetadata{PartitionKey: &key}}
			}
			resp, err := c.PutMessagesWithResponse(ctx, queueID, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: batch})
			if err != nil || resp.StatusCode() != http.StatusOK {
				b.Fatalf("put: %v %s", err, e2e.Body(resp))
			}
		}
	}

	plain := c.NewQueue(b, tenancyID)
	drainMessages := func() float64 {
		return drainConcurrently(b, func(stop *atomic.Bool, done *atomic.Int64) {
			limit, visibility, wait := messageBenchBatch, 300, 0
			for !stop.Load() {
				resp, err := c.GetMessagesWithResponse(ctx, plain, &sdk.GetMessagesParams{Limit: &limit, VisibilityInSeconds: &visibility, TimeoutInSeconds: &wait})
				if err != nil || resp.JSON200 == nil {
					b.Errorf("get: %v", err)
					return
				}
				if len(resp.JSON200.Messages) == 0 {
					return
				}
				entries := make([]sdk.DeleteMessagesDetailsEntry, len(resp.JSON200.Messages))
				for i, m := range resp.JSON200.Messages {
					entries[i] = sdk.DeleteMessagesDetailsEntry{Receipt: m.Receipt}
				}
				del, err := c.DeleteMessagesWithResponse(ctx, plain, &sdk.DeleteMessagesParams{}, sdk.DeleteMessagesDetails{Entries: entries})
				if err != nil || del.StatusCode() != http.StatusOK {
					b.Errorf("delete: %v", err)
					return
				}
				done.Add(int64(len(entries)))
			}
		})
	}

	partitioned := c.NewQueue(b, tenancyID, e2e.WithPartitions(partitionsBenchConsumers, false))
	c.NewGroup(b, partitioned, "stream", "", e2e.ByPartition())
	consumers := make([]string, partitionsBenchConsumers)
	for i := range consumers {
		consumers[i] = fmt.Sprintf("worker-%d", i)
	}
	// Settle the assignment first (one partition each): joining is not what is measured.
	settle := time.Now().Add(30 * time.Second)
	for settled := false; !settled; {
		settled = true
		for _, id := range consumers {
			if len(c.ReadPartitions(b, partitioned, "stream", id, 1, 0).Partitions) != 1 {
				settled = false
			}
		}
		if time.Now().After(settle) {
			b.Fatal("the assignment did not settle")
		}
	}
	drainPartitions := func() float64 {
		var next atomic.Int64
		return drainConcurrently(b, func(stop *atomic.Bool, done *atomic.Int64) {
			id := consumers[next.Add(1)-1]
			for !stop.Load() {
				resp, err := c.TryReadPartitions(partitioned, "stream", id, partitionsBenchBatch, 0)
				if err != nil || resp.JSON200 == nil {
					b.Errorf("read: %v", err)
					return
				}
				if len(resp.JSON200.Messages) == 0 {
					return
				}
				commit, err := c.TryCommit(partitioned, "stream", id, e2e.LastOffsets(resp.JSON200.Messages)...)
				if err != nil || commit.StatusCode() != http.StatusNoContent {
					b.Errorf("commit: %v %s", err, e2e.Body(commit))
					return
				}
				done.Add(int64(len(resp.JSON200.Messages)))
			}
		})
	}

	var messageRates, partitionRates, ratios []float64
	for round := 0; round < partitionsBenchRounds; round++ {
		fill(plain)
		messageRates = append(messageRates, drainMessages())
		fill(partitioned)
		partitionRates = append(partitionRates, drainPartitions())
		ratios = append(ratios, partitionRates[round]/messageRates[round])
	}
	messageRate, partitionRate, ratio := median(messageRates), median(partitionRates), median(ratios)

	var rebalance time.Duration
	if len(consumers) > 1 {
		rebalance = measureRebalance(b, c, partitioned, consumers, content)
	}
	b.ReportMetric(partitionRate, "partition_msgs/s")
	b.ReportMetric(messageRate, "message_msgs/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(rebalance.Milliseconds()), "rebalance_ms")
	fmt.Printf("partitions: rounds=%d consumers=%d messages=%d partition_batch=%d message_batch=%d partition_msgs_per_s=%.0f message_msgs_per_s=%.0f ratio=%.2f rebalance_ms=%d\n",
		partitionsBenchRounds, partitionsBenchConsumers, partitionsBenchMessages, partitionsBenchBatch, messageBenchBatch, partitionRate, messageRate, ratio,
		rebalance.Milliseconds())
	if rebalance > 2*time.Second {
		b.Errorf("rebalance after a consumer left took %v (target < 2 s)", rebalance)
	}
}

// drainConcurrently runs partitionsBenchConsumers consumers until each finds nothing more (or 2 minutes pass) and
// returns the messages consumed per second.
func drainConcurrently(b *testing.B, consume func(stop *atomic.Bool, done *atomic.Int64)) float64 {
	var stop atomic.Bool
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	timer := time.AfterFunc(2*time.Minute, func() { stop.Store(true) })
	defer timer.Stop()
	for i := 0; i < partitionsBenchConsumers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); consume(&stop, &done) }()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if done.Load() < partitionsBenchMessages {
		b.Fatalf("consumed %d of %d messages", done.Load(), partitionsBenchMessages)
	}
	return float64(done.Load()) / elapsed.Seconds()
}

// measureRebalance: every consumer but the first waits in a long poll with its partitions drained; the first
// holds messages of its partition without committing and leaves. It returns the time from the DeleteConsumer to the
// moment another consumer's poll returns the left partition's messages.
func measureRebalance(b *testing.B, c *e2e.Client, queueID string, consumers []string, content string) time.Duration {
	leaver := consumers[0]
	before := c.ReadPartitions(b, queueID, "stream", leaver, 1, 0)
	if len(before.Partitions) != 1 {
		b.Fatalf("%s owns %d partitions", leaver, len(before.Partitions))
	}
	left := before.Partitions[0].Partition
	// Publish until the leaver's partition has messages (keys spread over the partitions).
	for i := 0; ; i++ {
		key := fmt.Sprintf("probe-%d", i)
		c.Put(b, queueID, sdk.PutMessagesDetailsEntry{Content: content, Metadata: &sdk.MessageMetadata{PartitionKey: &key}})
		if len(c.ReadPartitions(b, queueID, "stream", leaver, 1, 0).Messages) > 0 {
			break
		}
		if i > 200 {
			b.Fatal("no key went to the leaver's partition")
		}
	}
	// The others commit what the probes put in their partitions, then wait.
	for _, id := range consumers[1:] {
		c.CommitRead(b, queueID, "stream", id, c.ReadPartitions(b, queueID, "stream", id, 1000, 0).Messages)
	}
	got := make(chan time.Time, len(consumers))
	var wg sync.WaitGroup
	for _, id := range consumers[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.TryReadPartitions(queueID, "stream", id, 100, 10)
			if err != nil || resp.JSON200 == nil {
				return
			}
			for _, m := range resp.JSON200.Messages {
				if m.Partition == left {
					got <- time.Now()
					return
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // the polls are waiting
	start := time.Now()
	c.LeaveGroup(b, queueID, "stream", leaver)
	var took time.Duration
	select {
	case at := <-got:
		took = at.Sub(start)
	case <-time.After(15 * time.Second):
		b.Fatal("no consumer received the left partition's messages")
	}
	wg.Wait()
	return took
}

// median of a few figures.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
