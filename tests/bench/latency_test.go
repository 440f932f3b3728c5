package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkLatencyBreakdown runs only BenchmarkQueue's put→receive phase (FERRY_LAT_ROUNDS times, at FERRY_LAT_RATE
// messages/s) on a fresh node and splits the latency: the put call, from the put's answer to the receive, the get
// and delete calls; with the database's commits and WAL syncs per second. A diagnostic for the p99 target, skipped
// unless FERRY_BENCH_LATENCY=1:
//
//	FERRY_BENCH_LATENCY=1 go test -run '^$' -bench LatencyBreakdown -benchtime 1x -v ./tests/bench/
func BenchmarkLatencyBreakdown(b *testing.B) {
	if os.Getenv("FERRY_BENCH_LATENCY") == "" {
		b.Skip("set FERRY_BENCH_LATENCY=1")
	}
	n := startNode(b)
	for i := 0; i < envInt("FERRY_LAT_ROUNDS", 2); i++ {
		q := n.createQueue(b, "latency")
		x0, s0, t0, w0 := n.pgStats(b)
		const putRoute = `operation="PutMessages"`
		before := n.serverDurations(b, putRoute)
		n.settle(b)
		statements := n.statementsReset() // with FERRY_BENCH_PG_SETTINGS=shared_preload_libraries=pg_stat_statements
		var waits <-chan string
		if os.Getenv("FERRY_LAT_SAMPLE") != "" { // the sampling's own queries cost PostgreSQL ~10 % of a core
			waits = n.sampleWaits(phase)
		}
		f, p, c := n.cpuPercent(func() { n.latency(b, q, envInt("FERRY_LAT_RATE", 1000), phase) })
		b.Logf("CPU (%% of one core): ferry %.0f, postgres %.0f, load generator %.0f", f, p, c)
		if statements {
			n.statementsReport(b, float64(envInt("FERRY_LAT_RATE", 1000))*phase.Seconds())
		}
		if waits != nil {
			b.Logf("what running statements were doing (pg_stat_activity samples every 2 ms): %s", <-waits)
		}
		b.Logf("PutMessages as ferry measured it (its HTTP duration histogram): %s",
			histogramQuantiles(before, n.serverDurations(b, putRoute)))
		x1, s1, t1, w1 := n.pgStats(b)
		secs := phase.Seconds() + 4
		b.Logf("per second: commits %.0f, WAL syncs %.0f, WAL %.0f KiB; mean WAL sync %.2f ms (0 unless track_wal_io_timing=on)",
			float64(x1-x0)/secs, float64(s1-s0)/secs, float64(w1-w0)/1024/secs, (t1-t0)/max(1, float64(s1-s0)))
		time.Sleep(time.Second)
		n.settle(b)
		var p50, p99 float64
		_, p, c = n.cpuPercent(func() { p50, p99 = n.sqlLatency(b, envInt("FERRY_LAT_RATE", 1000), phase) })
		b.Logf("raw SQL put→receive on the same database: p50 %.2f ms, p99 %.2f ms; CPU (%% of one core): postgres %.0f, load generator %.0f",
			p50, p99, p, c)
	}
}

// cpuPercent runs phase and returns the CPU that ferry, PostgreSQL and this process (the load generator) used
// meanwhile, in % of one core.
func (n *node) cpuPercent(phase func()) (ferry, postgres, client float64) {
	f0, p0, c0 := n.cpuSplit()
	start := time.Now()
	phase()
	f1, p1, c1 := n.cpuSplit()
	secs := time.Since(start).Seconds()
	return (f1 - f0) * 100 / secs, (p1 - p0) * 100 / secs, (c1 - c0) * 100 / secs
}

// pgStats reads the database's committed transactions and the cluster's WAL syncs, time spent syncing (ms) and
// WAL bytes so far.
func (n *node) pgStats(b testing.TB) (commits, walSyncs int64, syncMillis float64, walBytes int64) {
	ctx := context.Background()
	if err := n.pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&commits); err != nil {
		b.Fatal(err)
	}
	if err := n.pool.QueryRow(ctx, `SELECT wal_sync, wal_sync_time, wal_bytes FROM pg_stat_wal`).Scan(&walSyncs, &syncMillis, &walBytes); err != nil {
		b.Fatal(err)
	}
	return commits, walSyncs, syncMillis, walBytes
}

// pct renders p50/p99/max.
func pct(v []float64) string {
	slices.Sort(v)
	if len(v) == 0 {
		return "-"
	}
	return strconv.FormatFloat(v[len(v)/2], 'f', 2, 64) + "/" + strconv.FormatFloat(v[len(v)*99/100], 'f', 2, 64) + "/" + strconv.FormatFloat(v[len(v)-1], 'f', 1, 64)
}

// latency publishes single messages at rate/s for d while long-polling consumers receive them, logs each part of
// a message's way (the put call, from the put's answer to the receive, the get and delete calls) and returns the
// p50 and p99 of put→receive in milliseconds.
func (n *node) latency(b testing.TB, queue string, rate int, d time.Duration) (p50, p99 float64) {
	return n.latencyVia(b, []*node{n}, queue, rate, d)
}

// latencyVia is latency with the puts sent to n and the consumers spread over via (consumer i long-polls
// via[i%len(via)]): across nodes, a put's wake-up reaches the other nodes' waiting receives through PostgreSQL.
func (n *node) latencyVia(b testing.TB, via []*node, queue string, rate int, d time.Duration) (p50, p99 float64) {
	ctx, cancel := context.WithTimeout(context.Background(), d+3*time.Second)
	defer cancel()
	times := newPutTimes()
	var mu sync.Mutex
	var getDur, delDur []float64
	var wg sync.WaitGroup
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			consumer := via[c%len(via)]
			for ctx.Err() == nil {
				var got getResp
				g0 := time.Now()
				if _, err := consumer.call(ctx, http.MethodGet, "/20210201/queues/"+queue+"/messages?limit=32&timeoutInSeconds=5", nil, &got); err != nil {
					continue
				}
				now := time.Now().UnixNano()
				receipts := make([]string, 0, len(got.Messages))
				for _, m := range got.Messages {
					times.received(now, m.Content)
					receipts = append(receipts, m.Receipt)
				}
				if len(receipts) == 0 {
					continue
				}
				mu.Lock()
				getDur = append(getDur, float64(time.Since(g0))/1e6)
				mu.Unlock()
				d0 := time.Now()
				_, _ = consumer.call(context.WithoutCancel(ctx), http.MethodPost, "/20210201/queues/"+queue+"/messages/actions/deleteMessages",
					deleteBody(receipts), nil)
				mu.Lock()
				delDur = append(delDur, float64(time.Since(d0))/1e6)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	n.publishAtRate(ctx, queue, rate, d, times.put)
	time.Sleep(time.Second)
	cancel()
	wg.Wait()
	b.Logf("put calls over 20 ms: %d, by second of the phase: %s", len(times.slow), slowBySecond(times.slow))
	b.Logf("p50/p99/max ms: put→receive %s | put call %s | put answered→received %s | get call %s | delete call %s (n=%d)",
		pct(times.lat), pct(times.putDur), pct(times.afterPut), pct(getDur), pct(delDur), len(times.lat))
	return percentiles(b, times.lat)
}

// putTimes collects a latency phase's timings in milliseconds: put→received, the put calls (those over 20 ms with
// the second they started in, to tell one stall from many) and put answered→received (a message received before
// its put was answered is left out of that one). Read its fields once the phase is over.
type putTimes struct {
	mu                    sync.Mutex
	start                 int64
	lat, putDur, afterPut []float64
	slow                  []slowPut
	answered              map[int64]int64 // a put's send stamp → when it was answered (UnixNano)
}

func newPutTimes() *putTimes {
	return &putTimes{start: time.Now().UnixNano(), answered: map[int64]int64{}}
}

// put records a put call sent at sent and answered at done (publishAtRate's callback).
func (p *putTimes) put(sent, done int64) {
	ms := float64(done-sent) / 1e6
	p.mu.Lock()
	defer p.mu.Unlock()
	p.putDur = append(p.putDur, ms)
	if ms > 20 {
		p.slow = append(p.slow, slowPut{at: float64(sent-p.start) / 1e9, ms: ms})
	}
	p.answered[sent] = done
}

// received records a message that arrived at now; its content is its send stamp.
func (p *putTimes) received(now int64, content string) {
	sent, err := strconv.ParseInt(content, 10, 64)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lat = append(p.lat, float64(now-sent)/1e6)
	if done, ok := p.answered[sent]; ok {
		p.afterPut = append(p.afterPut, float64(now-done)/1e6)
	}
}

// serverDurations reads ferry's cumulative HTTP duration histogram of the requests whose labels contain labels
// (status 200) from /metrics: upper bound (seconds) → count.
func (n *node) serverDurations(b testing.TB, labels string) map[float64]float64 {
	resp, err := n.client.Get(n.metrics)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[float64]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "http_server_request_duration_seconds_bucket{") || !labelsMatch(line, labels) ||
			!strings.Contains(line, `http_response_status_code="200"`) {
			continue
		}
		le := line[strings.Index(line, `le="`)+4:]
		le = le[:strings.IndexByte(le, '"')]
		bound, err := strconv.ParseFloat(le, 64)
		if le == "+Inf" {
			bound, err = math.Inf(1), nil
		}
		count, err2 := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil && err2 == nil {
			out[bound] += count
		}
	}
	return out
}

// histogramQuantiles gives the bucket bounds that hold the p50 and p99 of the requests between two readings.
func histogramQuantiles(before, after map[float64]float64) string {
	bounds := make([]float64, 0, len(after))
	for le := range after {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	if len(bounds) == 0 {
		return "no samples"
	}
	total := after[bounds[len(bounds)-1]] - before[bounds[len(bounds)-1]]
	at := func(q float64) string {
		for _, le := range bounds {
			if after[le]-before[le] >= q*total {
				return fmt.Sprintf("≤ %g ms", le*1000)
			}
		}
		return "?"
	}
	return fmt.Sprintf("p50 %s, p99 %s (n=%.0f)", at(0.5), at(0.99), total)
}

// labelsMatch reports whether every name="value" of want appears in the metric line.
func labelsMatch(line, want string) bool {
	for _, l := range strings.Split(want, ",") {
		if !strings.Contains(line, l) {
			return false
		}
	}
	return true
}

// sampleWaits samples, for d, what the database's active data-plane statements wait for (wait_event, or "CPU"
// when none), and answers the counts in descending order.
func (n *node) sampleWaits(d time.Duration) <-chan string {
	out := make(chan string, 1)
	go func() {
		counts := map[string]int{}
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			rows, err := n.pool.Query(context.Background(), `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU'),
				split_part(query, E'\n', 1) FROM pg_stat_activity
				WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '-- messages.%'`)
			if err == nil {
				for rows.Next() {
					var wait, query string
					if rows.Scan(&wait, &query) == nil {
						counts[strings.TrimPrefix(query, "-- ")+" "+wait]++
					}
				}
				rows.Close()
			}
			time.Sleep(2 * time.Millisecond)
		}
		keys := make([]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int { return counts[b] - counts[a] })
		var sb strings.Builder
		for i, k := range keys {
			if i == 12 {
				break
			}
			fmt.Fprintf(&sb, "%s=%d ", k, counts[k])
		}
		out <- sb.String()
	}()
	return out
}

type slowPut struct{ at, ms float64 }

// slowBySecond renders "second:count(max ms)" for the seconds that had slow puts.
func slowBySecond(slow []slowPut) string {
	type agg struct {
		n   int
		max float64
	}
	bySec := map[int]*agg{}
	var secs []int
	for _, p := range slow {
		k := int(p.at)
		if bySec[k] == nil {
			bySec[k] = &agg{}
			secs = append(secs, k)
		}
		bySec[k].n++
		bySec[k].max = max(bySec[k].max, p.ms)
	}
	slices.Sort(secs)
	var sb strings.Builder
	for _, k := range secs {
		fmt.Fprintf(&sb, "%d:%d(%.0f) ", k, bySec[k].n, bySec[k].max)
	}
	return sb.String()
}
