package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/services/server"
)

// largeMessage is the size of the large-message phase's messages (64 KiB), and nodeWorkers the producers and the
// consumers of the three-node phase (a multiple of three, so that each node gets as many).
var (
	nodesOnly    = os.Getenv("FERRY_BENCH_LIMITS") == "nodes"   // only the three-node phases (a focused run)
	publishOnly  = os.Getenv("FERRY_BENCH_LIMITS") == "publish" // only the batched publish against the raw INSERT
	largeMessage = 64 << 10
	nodeWorkers  = envInt("FERRY_BENCH_NODE_WORKERS", 6)
)

// BenchmarkPublishedLimits measures the limits the documentation publishes (docs/benchmarks.md), each phase
// for FERRY_BENCH_SECONDS:
//   - batched publish against a raw 20-row INSERT at the same concurrency (peerWorkers each), alternated A B A B;
//   - one queue's throughput in and out with 64 KiB messages, produced and consumed at once;
//   - three ferry nodes on one PostgreSQL: the HTTP cycle with its workers spread over the three against all on
//     one node (alternated), and put→receive at 1,000 msg/s with the puts on one node and the consumers on the
//     two others, then on one node for comparison.
//
// The last line is machine-readable.
func BenchmarkPublishedLimits(b *testing.B) {
	n := startNode(b)
	b.Cleanup(func() { _, _ = n.pool.Exec(context.Background(), `DROP TABLE IF EXISTS bench_raw`) })
	b.Logf("phase=%s", phase)

	var ferryPut, rawPut float64
	for round := 1; round <= 2 && !nodesOnly; round++ {
		n.settle(b)
		statements := n.statementsReset() // with pg_stat_statements loaded (FERRY_BENCH_PG_SETTINGS), the statements' time
		f := n.publishOnly(b, n.createQueue(b, fmt.Sprintf("publish-%d", round)))
		if statements {
			n.statementsReport(b, float64(f.msgs))
		}
		n.settle(b)
		n.statementsReset()
		r := n.rawInsertOnly(b)
		if statements {
			n.statementsReport(b, float64(r.msgs))
		}
		b.Logf("round %d: publish, %d workers: ferry %s; raw 20-row INSERT %s", round, peerWorkers, f, r)
		ferryPut += f.rate() / 2
		rawPut += r.rate() / 2
	}
	// The one-node figures of the summary line; "skipped" in a run of the three-node phases alone.
	oneNode := "publish_over_raw_insert=skipped large_mb_per_s_in=skipped large_mb_per_s_out=skipped"
	if !nodesOnly {
		b.Logf("batched publish %.0f msgs/s over raw 20-row INSERT %.0f msgs/s: %.2f (target ≥ 0.75)", ferryPut, rawPut, ferryPut/rawPut)
		if publishOnly {
			fmt.Printf("publish_over_raw_insert=%.2f large_mb_per_s_in=skipped large_mb_per_s_out=skipped three_nodes_over_one=skipped\n", ferryPut/rawPut)
			return
		}
		n.settle(b)
		in, out := n.largeMessages(b, n.createQueue(b, "large"))
		b.Logf("one queue, 64 KiB messages: %.1f MB/s in, %.1f MB/s out (target 10 and 10)", in, out)
		oneNode = fmt.Sprintf("publish_over_raw_insert=%.2f large_mb_per_s_in=%.1f large_mb_per_s_out=%.1f", ferryPut/rawPut, in, out)
	}

	nodes := []*node{n, n.peer(b), n.peer(b)}
	var one, spread float64
	for round := 1; round <= 2; round++ {
		for _, on := range [][]*node{nodes[:1], nodes} {
			n.settle(b)
			statements := n.statementsReset()
			r := cycleOver(b, on, n.createQueue(b, fmt.Sprintf("nodes-%d-%d", len(on), round)))
			b.Logf("round %d: HTTP cycle on %d node(s), %d producers and %d consumers: %s", round, len(on), nodeWorkers, nodeWorkers, r)
			if statements {
				n.statementsReport(b, float64(r.msgs))
			}
			if len(on) == 1 {
				one += r.rate() / 2
			} else {
				spread += r.rate() / 2
			}
		}
	}
	b.Logf("three nodes %.0f msgs/s over one node %.0f msgs/s: %.2f", spread, one, spread/one)
	n.settle(b)
	p50, p99 := n.latencyVia(b, nodes[1:], n.createQueue(b, "cross-node"), 1000, phase)
	b.Logf("put→receive across nodes at 1,000 msg/s (puts on one node, long polls on the two others): p50 %.2f ms, p99 %.2f ms (target < 10)", p50, p99)
	n.settle(b)
	oneP50, oneP99 := n.latency(b, n.createQueue(b, "same-node"), 1000, phase)
	b.Logf("put→receive on one node at 1,000 msg/s, right after: p50 %.2f ms, p99 %.2f ms (cross-node/one-node p99 %.2f)", oneP50, oneP99, p99/oneP99)

	fmt.Printf("%s three_nodes_over_one=%.2f cross_node_p99_put_to_receive_ms=%.1f one_node_p99_put_to_receive_ms=%.1f\n",
		oneNode, spread/one, p99, oneP99)
}

// measured is what a timed phase did: messages over its duration, with each process's CPU and the requests its
// ferry nodes answered per 1,000 messages.
type measured struct {
	msgs     int64
	took     time.Duration
	cpu      cpuUse
	requests string
}

func (m measured) rate() float64 { return float64(m.msgs) / m.took.Seconds() }

func (m measured) String() string {
	s := fmt.Sprintf("%.0f msgs/s (CPU µs/msg %s)", m.rate(), m.cpu.perMsg(int(max(m.msgs, 1))))
	if m.requests != "" {
		s += "; ferry's requests per 1,000 messages: " + m.requests
	}
	return s
}

// timed runs work on workers goroutines until the phase ends and counts the messages they report; nodes are the
// ferry processes whose CPU counts (the first one's PostgreSQL too).
func timed(workers int, nodes []*node, work func(ctx context.Context, worker int) (msgs int, err error)) measured {
	ctx, cancel := context.WithTimeout(context.Background(), phase)
	defer cancel()
	var msgs atomic.Int64
	var wg sync.WaitGroup
	cpu0, requests0 := cpuNow(nodes...), requestsOf(nodes)
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if k, err := work(ctx, w); err == nil {
					msgs.Add(int64(k))
				}
			}
		})
	}
	wg.Wait()
	m := measured{msgs: msgs.Load(), took: time.Since(start), cpu: cpuNow(nodes...).since(cpu0)}
	m.requests = strings.TrimSpace(perThousand(requests0, requestsOf(nodes), float64(max(m.msgs, 1))))
	return m
}

// requestsOf sums the requestCounts of nodes.
func requestsOf(nodes []*node) map[string]float64 {
	sum := map[string]float64{}
	for _, n := range nodes {
		for k, v := range n.requestCounts() {
			sum[k] += v
		}
	}
	return sum
}

// publishOnly puts batches of 20 × 1 KiB to queue with peerWorkers workers for a phase, nobody consuming.
func (n *node) publishOnly(b testing.TB, queue string) measured {
	body := putBody(20, payload)
	m := timed(peerWorkers, []*node{n}, func(ctx context.Context, _ int) (int, error) {
		_, err := n.call(ctx, http.MethodPost, "/20210201/queues/"+queue+"/messages", body, nil)
		return 20, err
	})
	for _, f := range n.failures() {
		b.Logf("failed call: %s", f)
	}
	return m
}

// rawInsertOnly is publishOnly's peer in raw SQL: the 20-row INSERT of sqlCycle into bench_raw, with peerWorkers
// workers, on the same database.
func (n *node) rawInsertOnly(b testing.TB) measured {
	if _, err := n.pool.Exec(context.Background(), rawTable); err != nil {
		b.Fatal(err)
	}
	payloads := make([]string, 20)
	for i := range payloads {
		payloads[i] = payload
	}
	return timed(peerWorkers, []*node{n}, func(ctx context.Context, _ int) (int, error) {
		_, err := n.pool.Exec(ctx, rawInsert, payloads)
		return 20, err
	})
}

// putBody encodes a PutMessages request of count messages with content.
func putBody(count int, content string) []byte {
	batch := make([]putEntry, count)
	for i := range batch {
		batch[i] = putEntry{Content: content}
	}
	body, _ := json.Marshal(map[string]any{"messages": batch})
	return body
}

// largeMessages produces and consumes 64 KiB messages on queue at once for a phase (`producers` putting the
// largest batches the API takes while fewer than 320 messages wait, `consumers` getting 32 and deleting them) and
// returns the megabytes (10^6 bytes) of content per second put and deleted.
func (n *node) largeMessages(b testing.TB, queue string) (in, out float64) {
	// The batch: at most MaxPutMessages, and a body within the data plane's limit (JSON adds ~20 bytes a message).
	batch := min(openapi.MaxPutMessages, (server.DataPlaneBodyLimit-1024)/(largeMessage+64))
	c := cycle{nodes: []*node{n}, queue: queue, batch: batch, body: putBody(batch, strings.Repeat("x", largeMessage)),
		backlog: 320, producers: producers, consumers: consumers}
	b.Logf("64 KiB messages: batches of %d (%d bytes a request; limit %d)", batch, len(c.body), server.DataPlaneBodyLimit)
	put, m := c.run(b)
	b.Logf("64 KiB messages: %d put, %d consumed in %s (CPU µs/msg %s)", put, m.msgs, m.took.Round(time.Millisecond), m.cpu.perMsg(int(max(m.msgs, 1))))
	mb := func(msgs int64) float64 { return float64(msgs) * float64(largeMessage) / 1e6 / m.took.Seconds() }
	return mb(put), mb(m.msgs)
}

// cycleOver runs the HTTP cycle (1 KiB messages, batches of 20, get 32 + deleteMessages) on queue with
// nodeWorkers producers keeping 10,000 messages queued and nodeWorkers consumers spread over nodes, and measures
// the messages consumed.
func cycleOver(b testing.TB, nodes []*node, queue string) measured {
	c := cycle{nodes: nodes, queue: queue, batch: 20, body: putBody(20, payload), backlog: 10_000,
		producers: nodeWorkers, consumers: nodeWorkers}
	_, m := c.run(b)
	return m
}

// cycle is the HTTP cycle with its producers and consumers spread over nodes (worker i talks to
// nodes[i%len(nodes)]): producers put body (batch messages) while at most backlog messages wait, consumers get 32
// and delete them.
type cycle struct {
	nodes                []*node
	queue                string
	body                 []byte
	batch, backlog       int
	producers, consumers int
}

// run fills the queue to the backlog, runs the cycle for a phase, and returns the messages put during the phase
// and the messages consumed (with the CPU of every node's ferry and of PostgreSQL).
func (c cycle) run(b testing.TB) (put int64, consumed measured) {
	path := "/20210201/queues/" + c.queue + "/messages"
	var backlog, puts atomic.Int64
	for backlog.Load() < int64(c.backlog) {
		if _, err := c.nodes[0].call(context.Background(), http.MethodPost, path, c.body, nil); err != nil {
			b.Fatal(err)
		}
		backlog.Add(int64(c.batch))
	}
	m := timed(c.producers+c.consumers, c.nodes, func(ctx context.Context, w int) (int, error) {
		n := c.nodes[w%len(c.nodes)]
		if w < c.producers { // a producer: counted in puts, not in the phase's messages
			if backlog.Load() > int64(c.backlog) {
				time.Sleep(time.Millisecond) // the producers' pacing: the backlog is full
				return 0, nil
			}
			if _, err := n.call(ctx, http.MethodPost, path, c.body, nil); err != nil {
				return 0, err
			}
			backlog.Add(int64(c.batch))
			puts.Add(int64(c.batch))
			return 0, nil
		}
		var raw []byte
		if _, err := n.call(ctx, http.MethodGet, path+"?limit=32&timeoutInSeconds=1", nil, &raw); err != nil {
			return 0, err
		}
		receipts := scanReceipts(raw)
		if len(receipts) == 0 {
			return 0, nil
		}
		if _, err := n.call(context.WithoutCancel(ctx), http.MethodPost, path+"/actions/deleteMessages", deleteBody(receipts), nil); err != nil {
			return 0, err
		}
		backlog.Add(-int64(len(receipts)))
		return len(receipts), nil
	})
	for _, n := range c.nodes {
		for _, f := range n.failures() {
			b.Logf("failed call: %s", f)
		}
	}
	return puts.Load(), m
}
