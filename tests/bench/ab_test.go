package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkConsumeAB compares two builds of ferry on the consumption path, side by side at the same time: this
// checkout's ferry (A) and the binary FERRY_BENCH_AB_BIN (B, built from another revision), each a node on the same
// database, each draining its own queue with the standard calls (GetMessages limit 32, DeleteMessages) for the same
// window. A change of a few per cent cannot be told from the machine's drift by phases run one after the other
// (on a shared machine the same code's CPU per message can move by a quarter from one phase to the next); run at
// once, both builds see the same drift. Each round logs, per build, the messages acknowledged in the window, the
// CPU per message of its ferry process and of its PostgreSQL backends (told apart by application_name); the summary
// line gives B over A, the medians of the rounds' ratios:
//
//	git worktree add /tmp/base REV && (cd /tmp/base && go build -o /tmp/ferry-base ./cmd/ferry)
//	FERRY_BENCH_AB_BIN=/tmp/ferry-base go test -run '^$' -bench ConsumeAB -benchtime 1x -v ./tests/bench/
//
// The database's migrations are this checkout's: B must run on the same schema.
func BenchmarkConsumeAB(b *testing.B) {
	other := os.Getenv("FERRY_BENCH_AB_BIN")
	if other == "" {
		b.Skip("set FERRY_BENCH_AB_BIN to a ferry binary to compare with this checkout's")
	}
	rounds := envInt("FERRY_BENCH_AB_ROUNDS", 6)
	window := time.Duration(envInt("FERRY_BENCH_AB_SECONDS", 3)) * time.Second
	const fill = 80_000 // per queue: more than a build drains in the window
	db := startNode(b)  // hosts the database; idle during the windows
	var sides []*abSide
	for _, s := range []struct{ name, bin string }{{"A", db.bin}, {"B", other}} {
		app := "ferry-" + strings.ToLower(s.name) // its connections' application_name: how backendsCPU finds them
		sides = append(sides, &abSide{name: s.name, app: app,
			node: db.peerBinary(b, s.bin, "FERRY_DATABASE_URL="+db.dbURL+"&application_name="+app)})
	}
	b.Logf("A: %s, B: %s; %d rounds of %s, %d workers each, standard calls", db.bin, other, rounds, window, drainWorkers/2)
	var rate, ferryCPU, pgCPU []float64
	for round := 1; round <= rounds; round++ {
		order := sides
		if round%2 == 0 {
			order = []*abSide{sides[1], sides[0]} // the first filled lies lower in the id sequence: alternate
		}
		for _, s := range order {
			s.queue = db.createQueue(b, fmt.Sprintf("ab-%s-%d", s.name, round))
			db.fill(b, s.queue, fill)
		}
		db.settle(b)
		db.abWindow(b, sides, window)
		for _, s := range sides {
			b.Logf("round %d %s: %.0f msgs/s; CPU µs per message: ferry %.1f, its PostgreSQL backends %.1f",
				round, s.name, s.msgs/window.Seconds(), s.ferry*1e6/s.msgs, s.backends*1e6/s.msgs)
		}
		a, o := sides[0], sides[1]
		rate = append(rate, o.msgs/a.msgs)
		ferryCPU = append(ferryCPU, (o.ferry/o.msgs)/(a.ferry/a.msgs))
		pgCPU = append(pgCPU, (o.backends/o.msgs)/(a.backends/a.msgs))
		b.Logf("round %d B/A: rate %.3f, ferry CPU/msg %.3f, PostgreSQL backends CPU/msg %.3f", round, rate[round-1],
			ferryCPU[round-1], pgCPU[round-1])
		for _, s := range sides {
			if _, err := db.pool.Exec(context.Background(), `DELETE FROM messages WHERE queue_no = (SELECT no FROM queues WHERE id = $1)`, s.queue); err != nil {
				b.Fatal(err)
			}
		}
	}
	fmt.Printf("consume_ab_b_over_a rate=%.3f ferry_cpu_per_msg=%.3f postgres_cpu_per_msg=%.3f (medians of %d rounds)\n",
		median(rate), median(ferryCPU), median(pgCPU), rounds)
}

// abSide is one build in BenchmarkConsumeAB, and what its last window measured.
type abSide struct {
	name, app       string // app: its node's application_name
	node            *node
	queue           string
	msgs            float64 // acknowledged in the window
	ferry, backends float64 // CPU seconds in the window: its ferry process, its PostgreSQL backends
}

// abWindow drains each side's queue through its node at once for window, and records per side the messages
// acknowledged and the CPU its ferry and its backends used meanwhile.
func (db *node) abWindow(b *testing.B, sides []*abSide, window time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	f0, p0 := make([]float64, len(sides)), make([]float64, len(sides))
	for i, s := range sides {
		f0[i], p0[i] = s.node.ferryCPU(), db.backendsCPU(b, s.app)
	}
	counts := make([]atomic.Int64, len(sides))
	var wg sync.WaitGroup
	for i, s := range sides {
		for range max(drainWorkers/2, 1) {
			wg.Go(func() {
				st := &consumerState{}
				for ctx.Err() == nil {
					if k := s.node.standardConsumer(ctx, s.queue, st); k > 0 && ctx.Err() == nil {
						counts[i].Add(int64(k))
					}
				}
			})
		}
	}
	wg.Wait()
	for i, s := range sides {
		s.msgs = float64(counts[i].Load())
		s.ferry = s.node.ferryCPU() - f0[i]
		s.backends = db.backendsCPU(b, s.app) - p0[i]
		if s.msgs == 0 {
			b.Fatalf("%s acknowledged nothing in the window", s.name)
		}
	}
}

// backendsCPU is the CPU seconds used so far by the PostgreSQL backends whose application_name is app (a node's
// connections), from the scheduler's nanosecond counter (a backend's few hundred milliseconds in a window are
// too few 10 ms ticks). A backend that ended in between is missed: the pool keeps its connections for the run.
func (db *node) backendsCPU(b *testing.B, app string) float64 {
	rows, err := db.pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		pids = append(pids, pid)
	}
	var sum float64
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			continue
		}
		var ns float64
		if _, err := fmt.Sscan(string(raw), &ns); err == nil {
			sum += ns / 1e9
		}
	}
	return sum
}
