package bench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// The ordering benchmark's workload: 1,000 message groups × 100 messages, published by producers that each own a
// share of the groups (so every group is published in order), then consumed by consumers that get up to 32
// messages and acknowledge them with deleteMessages.
const (
	orderingGroups    = 1000
	orderingPerGroup  = 100
	orderingProducers = 16
	orderingConsumers = 16
	orderingLimit     = 32
	orderingBatch     = 20 // messages per PutMessages (its maximum) and entries per deleteMessages
)

// orderingResult is one mode's figures.
type orderingResult struct {
	publishPerSec, consumePerSec, overallPerSec float64
}

// BenchmarkOrdering runs the same 100,000 messages through an in-process server unordered and as 1,000 ordered
// message groups (metadata.messageGroupId), alternated (unordered, ordered, ordered, unordered), and reports
// messages/s of publishing, of consuming (limit 32, then deleteMessages), and of both, with the ordered/unordered ratios. Ordering costs a group lock and one index
// probe per put and acknowledgement, and nothing per receive: the target is ordered ≥ 50 % of unordered. The
// ordered run also checks that every group is delivered in publish order.
func BenchmarkOrdering(b *testing.B) {
	srv := testserver.Start(b, benchLimits)
	tenancyID, c := srv.Admin(b, "bench-ordering")
	var unordered, ordered orderingResult
	for b.Loop() {
		// A B B A, each mode's rates averaged over its two runs, so that the machine's drift weighs on both alike.
		u1 := runOrdering(b, srv, c, tenancyID, false)
		o1 := runOrdering(b, srv, c, tenancyID, true)
		o2 := runOrdering(b, srv, c, tenancyID, true)
		u2 := runOrdering(b, srv, c, tenancyID, false)
		unordered, ordered = u1.averagedWith(u2), o1.averagedWith(o2)
	}
	consumeRatio := ordered.consumePerSec / unordered.consumePerSec
	publishRatio := ordered.publishPerSec / unordered.publishPerSec
	overallRatio := ordered.overallPerSec / unordered.overallPerSec
	b.ReportMetric(unordered.consumePerSec, "unordered-consume-msgs/s")
	b.ReportMetric(ordered.consumePerSec, "ordered-consume-msgs/s")
	b.ReportMetric(unordered.publishPerSec, "unordered-publish-msgs/s")
	b.ReportMetric(ordered.publishPerSec, "ordered-publish-msgs/s")
	b.ReportMetric(consumeRatio, "consume-ratio")
	b.ReportMetric(overallRatio, "overall-ratio")
	fmt.Printf("ordering: groups=%d messages=%d | unordered publish_msgs_per_s=%.0f consume_msgs_per_s=%.0f overall_msgs_per_s=%.0f"+
		" | ordered publish_msgs_per_s=%.0f consume_msgs_per_s=%.0f overall_msgs_per_s=%.0f"+
		" | ordered_over_unordered publish=%.2f consume=%.2f overall=%.2f (target >= 0.50)\n",
		orderingGroups, orderingGroups*orderingPerGroup,
		unordered.publishPerSec, unordered.consumePerSec, unordered.overallPerSec,
		ordered.publishPerSec, ordered.consumePerSec, ordered.overallPerSec,
		publishRatio, consumeRatio, overallRatio)
	if overallRatio < 0.5 {
		b.Logf("below target: ordered runs at %.0f %% of unordered", 100*overallRatio)
	}
}

// averagedWith is the mean of two runs' rates.
func (r orderingResult) averagedWith(o orderingResult) orderingResult {
	r.publishPerSec = (r.publishPerSec + o.publishPerSec) / 2
	r.consumePerSec = (r.consumePerSec + o.consumePerSec) / 2
	r.overallPerSec = (r.overallPerSec + o.overallPerSec) / 2
	return r
}

// runOrdering publishes and consumes the workload on a new queue, ordered or not.
func runOrdering(b *testing.B, srv *testserver.Server, c *e2e.Client, tenancyID string, ordered bool) orderingResult {
	b.Helper()
	ctx := context.Background()
	visibility, timeout, maxSize := 120, 1, int64(1<<40)
	name := "unordered"
	if ordered {
		name = "ordered"
	}
	q, err := c.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{
		CompartmentId: tenancyID, DisplayName: name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		VisibilityInSeconds: &visibility, TimeoutInSeconds: &timeout, MaxSizeInBytes: &maxSize,
	})
	if err != nil || q.StatusCode() != http.StatusAccepted {
		b.Fatalf("create queue: %v %s", err, q.Body)
	}
	queueID := q.JSON202.Id
	total := orderingGroups * orderingPerGroup
	groupNames := make([]string, orderingGroups)
	for g := range groupNames {
		groupNames[g] = "g" + strconv.Itoa(g)
	}
	payload := strings.Repeat("x", 100)

	// Publish: producer p owns the groups g with g % producers == p and walks them seq by seq.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, orderingProducers+orderingConsumers)
	for p := range orderingProducers {
		wg.Go(func() {
			var batch []sdk.PutMessagesDetailsEntry
			flush := func() bool {
				if len(batch) == 0 {
					return true
				}
				resp, err := c.PutMessagesWithResponse(ctx, queueID, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: batch})
				if err == nil && resp.StatusCode() != http.StatusOK {
					err = fmt.Errorf("put: %d %s", resp.StatusCode(), resp.Body)
				}
				if err != nil {
					errs <- err
					return false
				}
				batch = batch[:0]
				return true
			}
			for seq := range orderingPerGroup {
				for g := p; g < orderingGroups; g += orderingProducers {
					e := sdk.PutMessagesDetailsEntry{Content: strconv.Itoa(g) + ":" + strconv.Itoa(seq) + ":" + payload}
					if ordered {
						e.Metadata = &sdk.MessageMetadata{MessageGroupId: &groupNames[g]}
					}
					batch = append(batch, e)
					if len(batch) == orderingBatch && !flush() {
						return
					}
				}
			}
			flush()
		})
	}
	wg.Wait()
	publish := time.Since(start)
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}

	// Consume: get up to 32, acknowledge them in deleteMessages batches. In ordered mode a group's next expected
	// sequence number is advanced before the acknowledgement that lets the server deliver it.
	next := make([]atomic.Int32, orderingGroups)
	var acked, outOfOrder atomic.Int64
	start = time.Now()
	deadline := start.Add(10 * time.Minute)
	for range orderingConsumers {
		wg.Go(func() {
			limit := orderingLimit
			for acked.Load() < int64(total) && time.Now().Before(deadline) {
				resp, err := c.GetMessagesWithResponse(ctx, queueID, &sdk.GetMessagesParams{Limit: &limit, TimeoutInSeconds: &timeout})
				if err == nil && resp.JSON200 == nil {
					err = fmt.Errorf("get: %d %s", resp.StatusCode(), resp.Body)
				}
				if err != nil {
					errs <- err
					return
				}
				msgs := resp.JSON200.Messages
				entries := make([]sdk.DeleteMessagesDetailsEntry, len(msgs))
				for i, m := range msgs {
					entries[i] = sdk.DeleteMessagesDetailsEntry{Receipt: m.Receipt}
					if ordered {
						parts := strings.SplitN(m.Content, ":", 3)
						g, _ := strconv.Atoi(parts[0])
						seq, _ := strconv.Atoi(parts[1])
						if !next[g].CompareAndSwap(int32(seq), int32(seq+1)) {
							outOfOrder.Add(1)
						}
					}
				}
				for s := 0; s < len(entries); s += orderingBatch {
					chunk := entries[s:min(s+orderingBatch, len(entries))]
					del, err := c.DeleteMessagesWithResponse(ctx, queueID, &sdk.DeleteMessagesParams{}, sdk.DeleteMessagesDetails{Entries: chunk})
					if err == nil && (del.JSON200 == nil || del.JSON200.ClientFailures+del.JSON200.ServerFailures > 0) {
						err = fmt.Errorf("deleteMessages: %d %s", del.StatusCode(), del.Body)
					}
					if err != nil {
						errs <- err
						return
					}
					acked.Add(int64(len(chunk)))
				}
			}
		})
	}
	wg.Wait()
	consume := time.Since(start)
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	if acked.Load() != int64(total) {
		b.Fatalf("%s: acknowledged %d of %d messages", name, acked.Load(), total)
	}
	if n := outOfOrder.Load(); n > 0 {
		b.Fatalf("%s: %d messages delivered out of their group's order", name, n)
	}
	r := orderingResult{
		publishPerSec: float64(total) / publish.Seconds(),
		consumePerSec: float64(total) / consume.Seconds(),
		overallPerSec: float64(total) / (publish + consume).Seconds(),
	}
	b.Logf("%s: published %d in %.2fs (%.0f msgs/s), consumed in %.2fs (%.0f msgs/s)", name, total,
		publish.Seconds(), r.publishPerSec, consume.Seconds(), r.consumePerSec)
	return r
}
