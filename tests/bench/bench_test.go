package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Settings (environment overrides): producers, consumers, seconds per throughput phase, the backlog of the
// "deep queue" phase.
var (
	producers   = envInt("FERRY_BENCH_PRODUCERS", 4)
	consumers   = envInt("FERRY_BENCH_CONSUMERS", 4)
	phase       = time.Duration(envInt("FERRY_BENCH_SECONDS", 10)) * time.Second
	deepBacklog = envInt("FERRY_BENCH_DEEP", 1_000_000)
	waiters     = envInt("FERRY_BENCH_WAITERS", 1000)
	payload     = strings.Repeat("x", 1024)
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkQueue runs every phase once (use -benchtime 1x) and prints the figures; the last line is
// machine-readable.
func BenchmarkQueue(b *testing.B) {
	n := startNode(b)
	ctx := context.Background()
	b.Logf("producers=%d consumers=%d phase=%s (1 KiB messages, batches of 20, get limit 32 + deleteMessages)", producers, consumers, phase)

	// The machine is shared and noisy: alternate the two cycles (A B A B) and compare the sums.
	throughputQueue := n.createQueue(b, "throughput")
	b.Cleanup(func() { _, _ = n.pool.Exec(context.Background(), `DROP TABLE IF EXISTS bench_raw`) })
	var httpRate, sqlRate float64
	for round := 0; round < 2; round++ {
		// Each phase starts settled (settle: vacuum, checkpoint), so neither pays for the other's dead rows: the
		// raw SQL phase right after ferry's used to run beside the vacuum of ferry's table, and the next round's
		// ferry phase beside raw SQL's.
		n.settle(b)
		statements := n.statementsReset()
		f0, p0, c0 := n.cpuSplit()
		roles0 := n.postgresCPUByRole()
		r0 := n.requestCounts()
		h := n.httpCycle(b, throughputQueue, 10_000)
		f1, p1, c1 := n.cpuSplit()
		roles1 := n.postgresCPUByRole()
		b.Logf("round %d: requests per 1,000 messages: %s", round+1, perThousand(r0, n.requestCounts(), h*phase.Seconds()))
		for _, f := range n.failures() {
			b.Logf("round %d: failed call: %s", round+1, f)
		}
		if statements {
			n.statementsReport(b, h*phase.Seconds())
		}
		n.settle(b)
		n.statementsReset()
		_, pRaw, cRaw := n.cpuSplit()
		rolesRaw := n.postgresCPUByRole()
		sq := n.sqlCycle(b, 10_000)
		if statements {
			n.statementsReport(b, sq*phase.Seconds())
		}
		_, p2, c2 := n.cpuSplit()
		b.Logf("round %d: postgres CPU µs/msg by role: http %s; raw sql %s", round+1,
			roleDelta(roles0, roles1, p1-p0, h*phase.Seconds()), roleDelta(rolesRaw, n.postgresCPUByRole(), p2-pRaw, sq*phase.Seconds()))
		perMsg := func(sec, rate float64) float64 { return sec * 1e6 / (rate * phase.Seconds()) }
		b.Logf("round %d: http %.0f msgs/s (CPU µs/msg: ferry %.0f, postgres %.0f, client %.0f), raw sql %.0f msgs/s (postgres %.0f, client %.0f)",
			round+1, h, perMsg(f1-f0, h), perMsg(p1-p0, h), perMsg(c1-c0, h), sq, perMsg(p2-pRaw, sq), perMsg(c2-cRaw, sq))
		httpRate += h / 2
		sqlRate += sq / 2
	}
	b.Logf("throughput: http %.0f msgs/s, raw sql %.0f msgs/s, ratio %.2f", httpRate, sqlRate, httpRate/sqlRate)

	// Latency before the deep backlog, each phase after settle (vacuum, checkpoint): the throughput rounds leave
	// ~1 GB of WAL and a table to vacuum, and doing either within a latency phase stalls commits for up to ~100 ms
	// (ferry's and raw SQL's alike). That is the benchmark's doing, not the 1,000 msg/s workload's.
	n.settle(b)
	p50, p99 := n.latency(b, n.createQueue(b, "latency"), 1000, phase)
	b.Logf("put→receive at 1,000 msg/s (long-polling consumers): p50 %.2f ms, p99 %.2f ms", p50, p99)
	n.settle(b)
	rawP50, rawP99 := n.sqlLatency(b, 1000, phase)
	b.Logf("raw SQL put→receive at 1,000 msg/s on the same database: p50 %.2f ms, p99 %.2f ms (ferry/raw p99 %.1f)",
		rawP50, rawP99, p99/rawP99)

	// Depth on equal terms: a fresh queue filled with 10,000 messages and one filled with deepBacklog, each
	// consumed while the producers put back what the consumers take, so each keeps its depth (backlog_test.go).
	deepRate, shallowRate := n.backlog(b)
	b.Logf("backlog: %.0f msgs/s with %d queued vs %.0f msgs/s with 10,000 queued (%.0f %%; the throughput rounds' queue: %.0f msgs/s)",
		deepRate, deepBacklog, shallowRate, 100*deepRate/shallowRate, httpRate)

	conns, rss, peak := n.idleWaiters(b, n.createQueue(b, "idle"), waiters)
	b.Logf("%d long polls on an empty queue: %d database connections in use, ferry RSS %d MiB (peak over the whole run %d MiB)",
		waiters, conns, rss/1024, peak/1024)

	_ = ctx
	fmt.Printf("ratio_http_over_sql=%.2f http_msgs_per_s=%.0f sql_msgs_per_s=%.0f p99_put_to_receive_ms=%.1f raw_sql_p99_put_to_receive_ms=%.1f deep_over_shallow=%.2f idle_waiter_db_conns=%d peak_rss_mib=%d\n",
		httpRate/sqlRate, httpRate, sqlRate, p99, rawP99, deepRate/shallowRate, conns, peak/1024)
}

type putEntry struct {
	Content string `json:"content"`
}

type getResp struct {
	Messages []struct {
		ID      int64  `json:"id"`
		Content string `json:"content"`
		Receipt string `json:"receipt"`
	} `json:"messages"`
}

// httpCycle runs producers and consumers against queue for one phase and returns consumed (deleted) messages/s.
// Producers keep the backlog near target (0 = no producers: drain the existing backlog).
func (n *node) httpCycle(b testing.TB, queue string, target int) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), phase)
	defer cancel()
	var consumed, backlog atomic.Int64
	var wg sync.WaitGroup
	if target > 0 {
		n.produce(ctx, &wg, queue, target, &backlog)
	}
	start := time.Now()
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var raw []byte
				if _, err := n.call(ctx, http.MethodGet, "/20210201/queues/"+queue+"/messages?limit=32&timeoutInSeconds=1", nil, &raw); err != nil {
					continue
				}
				// One acknowledgement per receive (deleteMessages takes as many entries as GetMessages returns).
				if receipts := scanReceipts(raw); len(receipts) > 0 {
					if _, err := n.call(context.WithoutCancel(ctx), http.MethodPost, "/20210201/queues/"+queue+"/messages/actions/deleteMessages",
						deleteBody(receipts), nil); err == nil {
						consumed.Add(int64(len(receipts)))
						backlog.Add(-int64(len(receipts)))
					}
				}
			}
		}()
	}
	wg.Wait()
	return float64(consumed.Load()) / time.Since(start).Seconds()
}

// sqlCycle is the same cycle as raw SQL on the same database: a 20-row INSERT, a SKIP LOCKED lease of 32 on an
// index that leaves leased rows behind (visible_at, id), and a DELETE by id, with ferry's durability and table
// settings (rawsql_test.go, migrations/0002). Producers keep the table's backlog near target.
func (n *node) sqlCycle(b testing.TB, target int) float64 {
	ctx := context.Background()
	// Like ferry's queue, the table lives on from one round to the next (with its backlog, dead rows and bloat).
	if _, err := n.pool.Exec(ctx, rawTable); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, phase)
	defer cancel()
	payloads := make([]string, 20)
	for i := range payloads {
		payloads[i] = payload
	}
	var consumed, backlog atomic.Int64
	var wg sync.WaitGroup
	keepBacklog(ctx, &wg, target, &backlog, func() error {
		_, err := n.pool.Exec(ctx, rawInsert, payloads)
		return err
	})
	start := time.Now()
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ids, _, err := rawLeaseBatch(ctx, n.pool, "bench_raw")
				if err != nil || len(ids) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				if err := rawDelete(context.WithoutCancel(ctx), n.pool, "bench_raw", ids); err == nil {
					consumed.Add(int64(len(ids)))
					backlog.Add(-int64(len(ids)))
				}
			}
		}()
	}
	wg.Wait()
	return float64(consumed.Load()) / time.Since(start).Seconds()
}

// fill puts count 1 KiB messages into queue directly in SQL (the HTTP path would take minutes), in the shape
// PutMessages stores them: fresh (visible_at '-infinity', for the cursor lease), the transaction's id taken
// before the first id is drawn (put.sql).
func (n *node) fill(b testing.TB, queue string, count int) {
	start := time.Now()
	ctx := context.Background()
	const chunk = 100_000
	for done := 0; done < count; done += chunk {
		k := min(chunk, count-done)
		if _, err := n.pool.Exec(ctx, `INSERT INTO messages (queue_no, group_no, id, visible_at, expire_at, size_bytes, content)
			SELECT (SELECT no FROM queues WHERE id = $1), 0, nextval('messages_id_seq'), '-infinity', now() + interval '1 day', 1024, $2
			FROM generate_series(1, $3) WHERE pg_current_xact_id() IS NOT NULL`,
			queue, payload, k); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := n.pool.Exec(ctx, `VACUUM ANALYZE messages`); err != nil {
		b.Fatal(err)
	}
	b.Logf("filled %d messages in %s", count, time.Since(start).Round(time.Second))
}

// percentiles reports the number of samples and returns their p50 and p99 (milliseconds).
func percentiles(b testing.TB, lat []float64) (p50, p99 float64) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return 0, 0
	}
	b.Logf("latency samples: %d", len(lat))
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

// idleWaiters opens count long polls on an empty queue and reports the database connections in use by ferry
// while they wait, and ferry's resident memory.
func (n *node) idleWaiters(b testing.TB, queue string, count int) (conns int, rss, peak int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < count; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
			_, _ = n.call(ctx, http.MethodGet, "/20210201/queues/"+queue+"/messages?limit=1&timeoutInSeconds=20", nil, nil)
		}()
	}
	// Wait until all are waiting (ferry reports them as a gauge on /metrics).
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if waitingReceives(n) >= count {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Logf("waiting receives reported by ferry: %d", waitingReceives(n))
	time.Sleep(2 * time.Second)
	conns = n.connectionsInUse(b)
	rss, peak = n.rssKiB()
	cancel()
	wg.Wait()
	return conns, rss, peak
}

func waitingReceives(n *node) int {
	for _, line := range strings.Split(n.metricsText(), "\n") {
		if strings.HasPrefix(line, "ferry_receives_waiting") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return int(v)
		}
	}
	return 0
}

// metricsText is ferry's /metrics page ("" when it cannot be read).
func (n *node) metricsText() string {
	resp, err := n.client.Get(n.metrics)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return string(raw)
}

// requestCounts counts the data-plane requests ferry answered so far, by operation and status.
func (n *node) requestCounts() map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(n.metricsText(), "\n") {
		if !strings.HasPrefix(line, "http_server_request_duration_seconds_count{") || !strings.Contains(line, "/messages") {
			continue
		}
		route, status := label(line, "http_route"), label(line, "http_response_status_code")
		v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		out[label(line, "http_request_method")+" "+route[strings.LastIndex(route, "/")+1:]+" "+status] += v
	}
	return out
}

// label is the value of a Prometheus line's label name ("" when absent).
func label(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	v := line[i+len(name)+2:]
	return v[:strings.IndexByte(v, '"')]
}

// perThousand renders the requests between two requestCounts per 1,000 messages.
func perThousand(before, after map[string]float64, msgs float64) string {
	keys := make([]string, 0, len(after))
	for k := range after {
		if after[k] > before[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s=%.1f ", k, (after[k]-before[k])*1000/msgs)
	}
	return sb.String()
}

// publishAtRate puts single messages, each carrying its send time (UnixNano) as content, at rate/s for d, and
// waits for the puts; done (when set) is called with each put's send and answer times.
func (n *node) publishAtRate(ctx context.Context, queue string, rate int, d time.Duration, done func(sent, answered int64)) {
	atRate(ctx, rate, d, func(ctx context.Context, sent int64) {
		body := map[string]any{"messages": []putEntry{{Content: strconv.FormatInt(sent, 10)}}}
		_, _ = n.call(ctx, http.MethodPost, "/20210201/queues/"+queue+"/messages", body, nil)
		if done != nil {
			done(sent, time.Now().UnixNano())
		}
	})
}

// atRate calls send (each in its own goroutine, with its start time in UnixNano) at rate/s for d, and waits for
// the calls to return. The calls get ctx, not the d-long sending window: one under way when the window closes
// completes (cancelled, a put could commit unannounced, and the bench would time its consumers' fallback poll).
func atRate(ctx context.Context, rate int, d time.Duration, send func(ctx context.Context, sent int64)) {
	interval := time.Second / time.Duration(rate)
	sendCtx, stopSending := context.WithTimeout(ctx, d)
	defer stopSending()
	var senders sync.WaitGroup
	next := time.Now()
	for sendCtx.Err() == nil {
		next = next.Add(interval)
		if wait := time.Until(next); wait > 0 {
			time.Sleep(wait)
		}
		senders.Add(1)
		go func() {
			defer senders.Done()
			send(ctx, time.Now().UnixNano())
		}()
	}
	senders.Wait()
}

// produce starts `producers` goroutines (counted in wg) that keep the queue's backlog near target with batches of
// 20 × 1 KiB until ctx ends, and returns once the backlog reached target.
func (n *node) produce(ctx context.Context, wg *sync.WaitGroup, queue string, target int, backlog *atomic.Int64) {
	batch := make([]putEntry, 20)
	for i := range batch {
		batch[i] = putEntry{Content: payload}
	}
	body, _ := json.Marshal(map[string]any{"messages": batch})
	keepBacklog(ctx, wg, target, backlog, func() error {
		_, err := n.call(ctx, http.MethodPost, "/20210201/queues/"+queue+"/messages", body, nil)
		return err
	})
}

// keepBacklog starts `producers` goroutines (counted in wg) that call put20 (which stores 20 messages) while the
// backlog is at most target, until ctx ends, and returns once the backlog reached target: the producers build
// it before anything is measured.
func keepBacklog(ctx context.Context, wg *sync.WaitGroup, target int, backlog *atomic.Int64, put20 func() error) {
	for range producers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if backlog.Load() > int64(target) {
					time.Sleep(time.Millisecond) // the producers' pacing: the backlog is full
					continue
				}
				if put20() == nil {
					backlog.Add(20)
				}
			}
		})
	}
	for backlog.Load() < int64(target) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond) // the interval of this poll of the backlog
	}
}

// settle vacuums and checkpoints the database and lets the machine calm down before a latency phase: the
// throughput rounds leave dead rows that autovacuum would otherwise clean up at full speed during the phase
// (BenchmarkWatch's put→push p99 was 87 ms with it, 20 ms without), and WAL that triggers a checkpoint. That
// work is the earlier phases' doing; the phase's own is measured.
func (n *node) settle(b testing.TB) {
	for _, sql := range []string{`VACUUM messages`, `VACUUM bench_raw`, `CHECKPOINT`} {
		if _, err := n.pool.Exec(context.Background(), sql); err != nil && !strings.Contains(err.Error(), "does not exist") {
			b.Fatal(err)
		}
	}
	time.Sleep(time.Second)
}
