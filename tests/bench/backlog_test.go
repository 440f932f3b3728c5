package bench

import (
	"context"
	"os"
	"testing"
)

// BenchmarkBacklog runs BenchmarkQueue's depth comparison alone; with pg_stat_statements preloaded
// (FERRY_BENCH_PG_SETTINGS=shared_preload_libraries=pg_stat_statements) it reports each phase's statements too.
// A diagnostic for the depth target, skipped unless FERRY_BENCH_BACKLOG=1:
//
//	FERRY_BENCH_BACKLOG=1 go test -run '^$' -bench Backlog -benchtime 1x -v ./tests/bench/
func BenchmarkBacklog(b *testing.B) {
	if os.Getenv("FERRY_BENCH_BACKLOG") == "" {
		b.Skip("set FERRY_BENCH_BACKLOG=1")
	}
	n := startNode(b)
	deep, shallow := n.backlog(b)
	b.Logf("deep/shallow %.2f (%.0f vs %.0f msgs/s, %d vs 10,000 queued)", deep/shallow, deep, shallow, deepBacklog)
}

// backlog compares the throughput of the get+delete cycle on a queue of deepBacklog messages with that on a queue
// of 10,000: fresh queues, filled, each consumed while the producers put back what the consumers take (target 1:
// the phase's puts minus its deletes stay near zero), so each keeps its depth. The phases run shallow, deep,
// deep, shallow, each after settle, so that the machine's drift over the run weighs on both (run once each,
// shallow then deep, the ratio was 0.81–0.89; alternated, 0.97–1.01). (Without settle, the fill's ~1.3 GB of
// WAL would checkpoint during the first phase.) Each phase's cost per message is logged: the CPU of ferry, PostgreSQL and
// the load generator, WAL bytes and full-page images (a deep queue's consumers touch a new page every few
// messages, and each page's first change after a checkpoint writes all of it to the WAL).
func (n *node) backlog(b testing.TB) (deepRate, shallowRate float64) {
	shallow := n.createQueue(b, "shallow")
	n.fill(b, shallow, 10_000)
	deep := n.createQueue(b, "deep")
	n.fill(b, deep, deepBacklog)
	for _, p := range []struct {
		name, queue string
		rate        *float64
	}{{"shallow", shallow, &shallowRate}, {"deep", deep, &deepRate}, {"deep", deep, &deepRate}, {"shallow", shallow, &shallowRate}} {
		n.settle(b)
		statements := n.statementsReset()
		f0, p0, c0 := n.cpuSplit()
		w0, fpi0 := n.walCounters(b)
		rate := n.httpCycle(b, p.queue, 1)
		f1, p1, c1 := n.cpuSplit()
		w1, fpi1 := n.walCounters(b)
		msgs := rate * phase.Seconds()
		b.Logf("backlog phase %s: %.0f msgs/s; per message: CPU µs ferry %.0f, postgres %.0f, client %.0f; WAL %.0f B, %.3f full-page images",
			p.name, rate, (f1-f0)*1e6/msgs, (p1-p0)*1e6/msgs, (c1-c0)*1e6/msgs, float64(w1-w0)/msgs, float64(fpi1-fpi0)/msgs)
		if statements {
			n.statementsReport(b, msgs)
		}
		*p.rate += rate / 2
	}
	return deepRate, shallowRate
}

// walCounters reads the cluster's WAL bytes and full-page images so far.
func (n *node) walCounters(b testing.TB) (bytes, fpi int64) {
	if err := n.pool.QueryRow(context.Background(), `SELECT wal_bytes, wal_fpi FROM pg_stat_wal`).Scan(&bytes, &fpi); err != nil {
		b.Fatal(err)
	}
	return bytes, fpi
}
