package bench

import (
	"context"
	"fmt"
	"maps"
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

// Settings of the drain phases (environment overrides): messages filled then drained, HTTP workers.
var (
	drainMessages = envInt("FERRY_BENCH_DRAIN_MESSAGES", 100_000)
	drainWorkers  = envInt("FERRY_BENCH_DRAIN_WORKERS", 8)
)

// BenchmarkConsume measures consumption alone, as a broker's users compare it: a queue filled with
// drainMessages 1 KiB messages, drained by drainWorkers HTTP workers, with the standard calls (GetMessages limit
// 32, then DeleteMessages of its receipts) and with DeleteAndGetMessages (each batch's receipts acknowledged by
// the call that leases the next), durable (the default) and with FERRY_DB_ASYNC_COMMIT=true on a peer of the
// same database. The phases alternate (A B B A) so that the machine's drift weighs on each alike. Each phase logs
// its rate and, per message, the CPU of ferry, of this cluster's PostgreSQL (also by process: backends,
// autovacuum, …) and of the load generator, the WAL bytes and the HTTP calls; with pg_stat_statements preloaded
// (FERRY_BENCH_PG_SETTINGS, see BenchmarkBacklog) its statements too. Skipped unless FERRY_BENCH_CONSUME=1 (make
// bench sets it):
//
//	FERRY_BENCH_CONSUME=1 go test -run '^$' -bench Consume -benchtime 1x -v ./tests/bench/
func BenchmarkConsume(b *testing.B) {
	if os.Getenv("FERRY_BENCH_CONSUME") == "" {
		b.Skip("set FERRY_BENCH_CONSUME=1")
	}
	durable := startNode(b)
	async := durable.peer(b, "FERRY_DB_ASYNC_COMMIT=true")
	b.Logf("drain %d messages of 1 KiB, %d workers, limit 32", drainMessages, drainWorkers)
	type side struct {
		name    string
		node    *node
		consume consumer
		rate    float64 // averaged over its phases
	}
	std := &side{"durable standard", durable, (*node).standardConsumer, 0}
	comb := &side{"durable combined", durable, (*node).combinedConsumer, 0}
	asyncStd := &side{"async standard", async, (*node).standardConsumer, 0}
	asyncComb := &side{"async combined", async, (*node).combinedConsumer, 0}
	for _, s := range []*side{std, comb, asyncStd, asyncComb, asyncComb, asyncStd, comb, std} {
		s.rate += durable.drainPhase(b, s.node, s.name, s.consume) / 2
	}
	b.Logf("consume+ack, standard calls: durable %.0f msgs/s, asynchronous commits %.0f msgs/s: durable/async %.3f",
		std.rate, asyncStd.rate, std.rate/asyncStd.rate)
	b.Logf("consume+ack, DeleteAndGetMessages: durable %.0f msgs/s (%.2f× the standard calls), asynchronous commits %.0f msgs/s: durable/async %.3f",
		comb.rate, comb.rate/std.rate, asyncComb.rate, comb.rate/asyncComb.rate)
	fmt.Printf("consume_msgs_per_s=%.0f consume_durable_over_async=%.3f consume_combined_msgs_per_s=%.0f combined_over_standard=%.2f\n",
		std.rate, std.rate/asyncStd.rate, comb.rate, comb.rate/std.rate)
}

// consumer is one drain worker's cycle: it consumes and acknowledges a batch of queue's messages and returns how
// many it acknowledged (0 when the queue had none visible).
type consumer func(n *node, ctx context.Context, queue string, state *consumerState) int

// consumerState is what a worker carries from one cycle to the next (the receipts not yet acknowledged, for a
// cycle that acknowledges with its next receive), and the time its calls took by kind.
type consumerState struct {
	pending []string
	calls   int64
	spent   map[string]callTime
}

// callTime is the calls of one kind that succeeded, and the time they took.
type callTime struct {
	n     int64
	total time.Duration
}

// call makes one HTTP call of kind (its method and path, for the phase's log) and counts its time when it
// succeeds.
func (st *consumerState) call(ctx context.Context, n *node, kind, method, path string, in, out any) error {
	st.calls++
	start := time.Now()
	if _, err := n.call(ctx, method, path, in, out); err != nil {
		return err
	}
	if st.spent == nil {
		st.spent = map[string]callTime{}
	}
	c := st.spent[kind]
	st.spent[kind] = callTime{c.n + 1, c.total + time.Since(start)}
	return nil
}

// standardConsumer: GetMessages, then DeleteMessages of its receipts (two round trips per batch).
func (n *node) standardConsumer(ctx context.Context, queue string, st *consumerState) int {
	var raw []byte
	if err := st.call(ctx, n, "GetMessages", http.MethodGet, "/20210201/queues/"+queue+"/messages?limit=32&timeoutInSeconds=0", nil, &raw); err != nil {
		return 0
	}
	receipts := scanReceipts(raw)
	if len(receipts) == 0 {
		return 0
	}
	if err := st.call(ctx, n, "DeleteMessages", http.MethodPost, "/20210201/queues/"+queue+"/messages/actions/deleteMessages",
		deleteBody(receipts), nil); err != nil {
		return 0
	}
	return len(receipts)
}

// combinedConsumer: DeleteAndGetMessages with the previous batch's receipts (one round trip per batch). Neither
// consumer long-polls (timeoutInSeconds=0): the call that acknowledges the last batch would otherwise wait the
// queue's whole timeout for messages that never come, and count it in the phase.
func (n *node) combinedConsumer(ctx context.Context, queue string, st *consumerState) int {
	if len(st.pending) == 0 {
		var raw []byte
		if err := st.call(ctx, n, "GetMessages", http.MethodGet, "/20210201/queues/"+queue+"/messages?limit=32&timeoutInSeconds=0", nil, &raw); err != nil {
			return 0
		}
		st.pending = scanReceipts(raw)
		return 0
	}
	var raw []byte
	if err := st.call(ctx, n, "DeleteAndGetMessages", http.MethodPost, "/20210201/queues/"+queue+"/messages/actions/deleteAndGetMessages?limit=32&timeoutInSeconds=0",
		deleteBody(st.pending), &raw); err != nil {
		return 0
	}
	acked := len(st.pending) // the bench's receipts are all fresh: each entry succeeds
	st.pending = scanLeasedReceipts(raw)
	return acked
}

// drainPhase fills a fresh queue (through db, the node that hosts the database) and drains it through n with
// consume, and returns the rate (acknowledged messages/s).
func (db *node) drainPhase(b *testing.B, n *node, name string, consume consumer) float64 {
	queue := db.createQueue(b, "drain-"+name)
	db.fill(b, queue, drainMessages)
	db.settle(b)
	statements := db.statementsReset()
	f0, p0, c0 := n.ferryCPU(), db.ownPostgresCPU(), processCPU(os.Getpid(), false)
	roles0 := db.postgresCPUByRole()
	w0, _ := db.walCounters(b)
	var consumed, calls atomic.Int64
	var mu sync.Mutex
	spent := map[string]callTime{} // the workers' calls by kind
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range drainWorkers {
		wg.Go(func() {
			st := &consumerState{}
			for ctx.Err() == nil && consumed.Load() < int64(drainMessages) {
				if k := consume(n, ctx, queue, st); k > 0 {
					consumed.Add(int64(k))
				} else if consumed.Load() < int64(drainMessages) {
					time.Sleep(time.Millisecond) // the rest is leased by the other workers: wait for their acks
				}
			}
			calls.Add(st.calls)
			mu.Lock()
			for kind, c := range st.spent {
				sum := spent[kind]
				spent[kind] = callTime{sum.n + c.n, sum.total + c.total}
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	f1, p1, c1 := n.ferryCPU(), db.ownPostgresCPU(), processCPU(os.Getpid(), false)
	roles1 := db.postgresCPUByRole()
	w1, _ := db.walCounters(b)
	msgs := float64(consumed.Load())
	rate := msgs / elapsed
	b.Logf("drain %-8s %.0f msgs/s; per message: CPU µs ferry %.1f, postgres %.1f, client %.1f; WAL %.0f B; HTTP calls %.3f",
		name, rate, (f1-f0)*1e6/msgs, (p1-p0)*1e6/msgs, (c1-c0)*1e6/msgs, float64(w1-w0)/msgs, float64(calls.Load())/msgs)
	var means []string
	for _, kind := range slices.Sorted(maps.Keys(spent)) {
		c := spent[kind]
		means = append(means, fmt.Sprintf("%s %.2f ms (%d)", kind, c.total.Seconds()*1000/float64(c.n), c.n))
	}
	b.Logf("drain %s: each worker's calls, mean time: %s", name, strings.Join(means, ", "))
	b.Logf("drain %s: PostgreSQL's CPU µs per message by process: %s", name, roleDelta(roles0, roles1, p1-p0, msgs))
	for _, f := range n.failures() {
		b.Logf("drain %s: failed call: %s", name, f)
	}
	if statements {
		db.statementsReport(b, msgs)
	}
	if _, err := db.pool.Exec(context.Background(), `DELETE FROM messages WHERE queue_no = (SELECT no FROM queues WHERE id = $1)`, queue); err != nil && !strings.Contains(err.Error(), "does not exist") {
		b.Fatal(err)
	}
	return rate
}

// ownPostgresCPU is the CPU seconds used so far by this node's PostgreSQL cluster alone: its postmaster with its
// reaped children, and its live children (cpuSplit counts every postgres process of the machine, other
// benchmarks' too).
func (n *node) ownPostgresCPU() float64 {
	postmaster := 0
	for _, pid := range processes() {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.HasPrefix(string(cmdline), "/") && strings.Contains(string(cmdline), n.pgDir) {
			postmaster = pid
			break
		}
	}
	if postmaster == 0 {
		return 0
	}
	sum := processCPU(postmaster, true)
	for _, pid := range processes() {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(postmaster) {
			sum += processCPU(pid, false)
		}
	}
	return sum
}
