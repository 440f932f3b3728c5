package bench

import (
	"fmt"
	"testing"
)

// BenchmarkMetricsCost measures what the tenant metrics cost the data plane: the throughput cycle of
// BenchmarkQueue on a node that keeps the rollups (the default) and on one that does not
// (FERRY_METRICS_ROLLUPS=false), both peers of a first node that hosts the database and stays idle (so that
// neither is the first node), alternating A B A B A B, each on its own queue so that both queues grow alike, and
// prints the ratio of the sums.
func BenchmarkMetricsCost(b *testing.B) {
	first := startNode(b)
	on, off := first.peer(b), first.peer(b, "FERRY_METRICS_ROLLUPS=false")
	qOn, qOff := first.createQueue(b, "rollups-on"), first.createQueue(b, "rollups-off")
	var onRate, offRate float64
	const rounds = 3
	for round := 1; round <= rounds; round++ {
		on.settle(b)
		a := on.httpCycle(b, qOn, 10_000)
		on.settle(b)
		c := off.httpCycle(b, qOff, 10_000)
		b.Logf("round %d: rollups on %.0f msgs/s, off %.0f msgs/s", round, a, c)
		onRate += a / rounds
		offRate += c / rounds
	}
	b.Logf("rollups on %.0f msgs/s, off %.0f msgs/s: on/off %.3f", onRate, offRate, onRate/offRate)
	fmt.Printf("metrics_rollups_on_over_off=%.3f\n", onRate/offRate)
}
