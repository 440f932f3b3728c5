package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// watchers is how many idle watches the memory phase opens.
var watchers = envInt("FERRY_BENCH_WATCHERS", 1000)

// BenchmarkWatch measures push consumers (issue 7) against the same server: push throughput with window 100
// against the long-poll cycle (alternating, A B A B), put→push latency at 1,000 msg/s, and what 1,000 idle
// watches cost in resident memory and database connections. The last line is machine-readable.
func BenchmarkWatch(b *testing.B) {
	n := startNode(b)
	b.Logf("producers=%d consumers=%d phase=%s (1 KiB messages, batches of 20; watches: window 100, a commit per frame, replies not awaited)", producers, consumers, phase)

	queue := n.createQueue(b, "push-throughput")
	var pushRate, pollRate float64
	for round := 0; round < 2; round++ {
		statements := n.statementsReset()
		f0, p0, c0 := n.cpuSplit()
		p := n.watchCycle(b, queue, 10_000, 100)
		f1, p1, c1 := n.cpuSplit()
		if statements {
			n.statementsReport(b, p*phase.Seconds())
			n.statementsReset()
		}
		l := n.httpCycle(b, queue, 10_000)
		f2, p2, c2 := n.cpuSplit()
		if statements {
			n.statementsReport(b, l*phase.Seconds())
		}
		perMsg := func(sec, rate float64) float64 { return sec * 1e6 / (rate * phase.Seconds()) }
		b.Logf("round %d: push %.0f msgs/s (CPU µs/msg: ferry %.0f, postgres %.0f, client %.0f), long poll %.0f msgs/s (ferry %.0f, postgres %.0f, client %.0f)",
			round+1, p, perMsg(f1-f0, p), perMsg(p1-p0, p), perMsg(c1-c0, p), l, perMsg(f2-f1, l), perMsg(p2-p1, l), perMsg(c2-c1, l))
		pushRate += p / 2
		pollRate += l / 2
	}
	b.Logf("throughput: push %.0f msgs/s, long poll %.0f msgs/s, ratio %.2f", pushRate, pollRate, pushRate/pollRate)

	n.settle(b)
	p50, p99 := n.pushLatency(b, n.createQueue(b, "push-latency"), 1000, phase)
	b.Logf("put→push at 1,000 msg/s (%d watches, window 100): p50 %.2f ms, p99 %.2f ms", consumers, p50, p99)

	conns, added := n.idleWatchers(b, n.createQueue(b, "push-idle"), watchers)
	b.Logf("%d idle watches: %d database connections in use, ferry RSS +%d MiB", watchers, conns, added/1024)

	fmt.Printf("push_msgs_per_s=%.0f poll_msgs_per_s=%.0f push_over_poll=%.2f p50_put_to_push_ms=%.1f p99_put_to_push_ms=%.1f idle_watch_db_conns=%d idle_watch_rss_added_mib=%d\n",
		pushRate, pollRate, pushRate/pollRate, p50, p99, conns, added/1024)
}

// watch opens a watch with the benchmark's token.
func (n *node) watch(ctx context.Context, queue, consumer string, window int) (*sdk.Watcher, error) {
	return sdk.Watch(ctx, n.base, queue, sdk.WatchOptions{Token: n.token, ConsumerID: consumer, Window: window, HTTPClient: n.client})
}

// watchCycle keeps the backlog near target with producers while `consumers` watches consume. Each consumes as the
// long-poll cycle's consumers do: it reads a frame's receipts only (scanReceipts) and commits them in one frame;
// it reads on without waiting for the reply (the window bounds what it holds), and a message counts once the
// reply to its commit reports no error. It returns committed messages/s.
func (n *node) watchCycle(b testing.TB, queue string, target, window int) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), phase)
	defer cancel()
	var consumed, backlog atomic.Int64
	var wg sync.WaitGroup
	n.produce(ctx, &wg, queue, target, &backlog)
	start := time.Now()
	for c := 0; c < consumers; c++ {
		conn, _, err := websocket.Dial(ctx, n.base+"/20210201/queues/"+queue+"/messages/watch?window="+strconv.Itoa(window),
			&websocket.DialOptions{HTTPClient: n.client, HTTPHeader: http.Header{
				"Authorization": {"Bearer " + n.token}, "X-Ferry-Consumer-Id": {"throughput-" + strconv.Itoa(c)}}})
		if err != nil {
			b.Fatal(err)
		}
		conn.SetReadLimit(64 << 20)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = conn.Close(websocket.StatusNormalClosure, "") }()
			var committing []int // receipts per commit frame awaiting its reply, in order
			for {
				_, data, err := conn.Read(ctx)
				if err != nil {
					return
				}
				switch {
				case bytes.HasPrefix(data, []byte(`{"messages":`)):
					receipts := scanReceipts(data)
					if len(receipts) == 0 {
						continue
					}
					if err := conn.Write(ctx, websocket.MessageText, commitFrame(receipts)); err != nil {
						return
					}
					committing = append(committing, len(receipts))
				case bytes.HasPrefix(data, []byte(`{"reply":`)) && len(committing) > 0:
					k := int64(committing[0])
					committing = committing[1:]
					if bytes.Contains(data, []byte(`"errors":[]`)) && !bytes.Contains(data, []byte(`"error":`)) {
						consumed.Add(k)
						backlog.Add(-k)
					}
				}
			}
		}()
	}
	wg.Wait()
	return float64(consumed.Load()) / time.Since(start).Seconds()
}

// pushLatency publishes single messages at rate/s for d while watches receive them, and returns the p50 and p99
// of put→push in milliseconds.
func (n *node) pushLatency(b testing.TB, queue string, rate int, d time.Duration) (p50, p99 float64) {
	ctx, cancel := context.WithTimeout(context.Background(), d+3*time.Second)
	defer cancel()
	times := newPutTimes()
	var wg sync.WaitGroup
	for c := 0; c < consumers; c++ {
		w, err := n.watch(ctx, queue, "latency-"+strconv.Itoa(c), 100)
		if err != nil {
			b.Fatal(err)
		}
		// The reader stamps each frame as it arrives and hands its receipts to a committer: a consumer that waited
		// for each commit's reply before reading on would add that round trip to the next messages' latency,
		// which is the client's doing, not the push's.
		commits := make(chan []string, 1000)
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer func() { _ = w.Close() }()
			defer close(commits)
			for ctx.Err() == nil {
				got, ok := nextBatch(ctx, w, 100)
				if !ok {
					return
				}
				now := time.Now().UnixNano()
				for _, m := range got {
					times.received(now, m.Content)
				}
				commits <- receiptsOf(got)
			}
		}()
		go func() {
			defer wg.Done()
			for receipts := range commits {
				_, _ = w.Commit(context.WithoutCancel(ctx), receipts...)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // the watches are waiting
	n.publishAtRate(ctx, queue, rate, d, times.put)
	time.Sleep(time.Second) // the last messages arrive
	cancel()
	wg.Wait()
	b.Logf("p50/p99/max ms: put→push %s | put call %s | put answered→pushed %s (messages pushed before their put was answered are left out of the last)",
		pct(times.lat), pct(times.putDur), pct(times.afterPut))
	return percentiles(b, times.lat)
}

// idleWatchers opens count watches (distinct consumers) on an empty queue and reports the database connections
// in use while they wait and how much ferry's resident memory grew.
func (n *node) idleWatchers(b testing.TB, queue string, count int) (conns int, added int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	time.Sleep(2 * time.Second) // let the previous phase's memory settle
	before, _ := n.rssKiB()
	list := make([]*sdk.Watcher, 0, count)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := 0; i < count; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w, err := n.watch(ctx, queue, "idle-"+strconv.Itoa(i), 10)
			if err != nil {
				b.Errorf("watch %d: %v", i, err)
				return
			}
			mu.Lock()
			list = append(list, w)
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.Logf("open watches: %d", len(list))
	time.Sleep(5 * time.Second) // a heartbeat or two, pings
	conns = n.connectionsInUse(b)
	after, _ := n.rssKiB()
	for _, w := range list {
		_ = w.Close()
	}
	return conns, after - before
}

// nextBatch waits for a pushed message, then takes those that have arrived too (up to max); ok is false when the
// watch or ctx ended.
func nextBatch(ctx context.Context, w *sdk.Watcher, max int) (got []sdk.GetMessage, ok bool) {
	select {
	case m, open := <-w.Messages():
		if !open {
			return nil, false
		}
		got = append(got, m)
	case <-ctx.Done():
		return nil, false
	}
	for len(got) < max {
		select {
		case m, open := <-w.Messages():
			if !open {
				return got, true
			}
			got = append(got, m)
		default:
			return got, true
		}
	}
	return got, true
}

func receiptsOf(msgs []sdk.GetMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Receipt
	}
	return out
}
