package bench

import (
	"fmt"
	"testing"
)

// BenchmarkMetricsCost measures what the tenant metrics cost the data plane: the throughput cycle of
// BenchmarkQueue on a node that keeps the rollups (the default) and on one that does not
// (FERRY_METRICS_ROLLUPS=false), both peers of a first node that hosts the database and stays idle (so that
// neither is the first node), each on its own queue so that both queues grow alike, and prints the ratio of the
// averages. The sides alternate A B B A A B B A: the second phase of a round ran ~5 % slower than the first.
func BenchmarkMetricsCost(b *testing.B) {
	first := startNode(b)
	type side struct {
		node  *node
		queue string
		rate  float64 // msgs/s, averaged over the rounds
	}
	on := &side{node: first.peer(b), queue: first.createQueue(b, "rollups-on")}
	off := &side{node: first.peer(b, "FERRY_METRICS_ROLLUPS=false"), queue: first.createQueue(b, "rollups-off")}
	const rounds = 4
	for round := 1; round <= rounds; round++ {
		order := []*side{on, off}
		if round%2 == 0 {
			order = []*side{off, on}
		}
		var rates [2]float64
		for i, s := range order {
			s.node.settle(b)
			rates[i] = s.node.httpCycle(b, s.queue, 10_000)
			s.rate += rates[i] / rounds
		}
		if round%2 == 0 {
			rates[0], rates[1] = rates[1], rates[0]
		}
		b.Logf("round %d: rollups on %.0f msgs/s, off %.0f msgs/s", round, rates[0], rates[1])
	}
	b.Logf("rollups on %.0f msgs/s, off %.0f msgs/s: on/off %.3f", on.rate, off.rate, on.rate/off.rate)
	fmt.Printf("metrics_rollups_on_over_off=%.3f\n", on.rate/off.rate)
}
