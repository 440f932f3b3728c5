package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// watchers is how many idle watches the memory phase opens.
var watchers = envInt("FERRY_BENCH_WATCHERS", 1000)

// BenchmarkWatch measures push consumers (issue 7) against the same server: push throughput with window 100
// against the long-poll cycle (alternating, A B A B), put→push latency at 1,000 msg/s, and what 1,000 idle
// watches cost in resident memory and database connections. The last line is machine-readable.
func BenchmarkWatch(b *testing.B) {
	n := startNode(b)
	b.Logf("producers=%d consumers=%d phase=%s (1 KiB messages, batches of 20; watches: window 100, commit per frame)", producers, consumers, phase)

	queue := n.createQueue(b, "push-throughput")
	var pushRate, pollRate float64
	for round := 0; round < 2; round++ {
		cpu0 := n.ferryCPU()
		p := n.watchCycle(b, queue, 10_000, 100)
		cpu1 := n.ferryCPU()
		l := n.httpCycle(b, queue, 10_000)
		b.Logf("round %d: push %.0f msgs/s (ferry CPU %.0f µs/msg), long poll %.0f msgs/s", round+1, p,
			(cpu1-cpu0)*1e6/(p*phase.Seconds()), l)
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

// watchCycle keeps the backlog near target with producers while `consumers` watches consume: each commits what
// it has received in one frame. It returns committed messages/s.
func (n *node) watchCycle(b testing.TB, queue string, target, window int) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), phase)
	defer cancel()
	var consumed, backlog atomic.Int64
	var wg sync.WaitGroup
	n.produce(ctx, &wg, queue, target, &backlog)
	start := time.Now()
	for c := 0; c < consumers; c++ {
		w, err := n.watch(ctx, queue, "throughput-"+strconv.Itoa(c), window)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = w.Close() }()
			for ctx.Err() == nil {
				got, ok := nextBatch(ctx, w, window)
				if !ok {
					return
				}
				receipts := receiptsOf(got)
				if _, err := w.Commit(context.WithoutCancel(ctx), receipts...); err == nil {
					consumed.Add(int64(len(receipts)))
					backlog.Add(-int64(len(receipts)))
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
	var mu sync.Mutex
	var lat []float64
	var wg sync.WaitGroup
	for c := 0; c < consumers; c++ {
		w, err := n.watch(ctx, queue, "latency-"+strconv.Itoa(c), 100)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = w.Close() }()
			for ctx.Err() == nil {
				got, ok := nextBatch(ctx, w, 100)
				if !ok {
					return
				}
				now := time.Now().UnixNano()
				mu.Lock()
				for _, m := range got {
					if sent, err := strconv.ParseInt(m.Content, 10, 64); err == nil {
						lat = append(lat, float64(now-sent)/1e6)
					}
				}
				mu.Unlock()
				receipts := receiptsOf(got)
				_, _ = w.Commit(context.WithoutCancel(ctx), receipts...)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // the watches are waiting
	n.publishAtRate(ctx, queue, rate, d, nil)
	time.Sleep(time.Second) // the last messages arrive
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return percentiles(b, lat)
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
	if err := n.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`).Scan(&conns); err != nil {
		b.Fatal(err)
	}
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
