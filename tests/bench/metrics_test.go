package bench

import (
	"fmt"
	"testing"
)

// BenchmarkMetricsCost measures what the tenant metrics cost the data plane: the throughput cycle with the
// rollups (the default) against FERRY_METRICS_ROLLUPS=false.
func BenchmarkMetricsCost(b *testing.B) {
	on, off := compareSettings(b, nil, []string{"FERRY_METRICS_ROLLUPS=false"})
	b.Logf("rollups on %.0f msgs/s, off %.0f msgs/s: on/off %.3f", on, off, on/off)
	fmt.Printf("metrics_rollups_on_over_off=%.3f\n", on/off)
}

// BenchmarkDurabilityCost measures what durable acknowledgements cost (their commits wait for their WAL, the
// default) against FERRY_DB_ASYNC_COMMIT=true, where a database crash can undo an acknowledged delete (and every
// lease commits without waiting, as those with a visibility timeout of a few seconds or more always do).
func BenchmarkDurabilityCost(b *testing.B) {
	durable, async := compareSettings(b, nil, []string{"FERRY_DB_ASYNC_COMMIT=true"})
	b.Logf("durable %.0f msgs/s, asynchronous commits %.0f msgs/s: durable/async %.3f", durable, async, durable/async)
	fmt.Printf("durable_over_async_commit=%.3f\n", durable/async)
}

// compareSettings runs BenchmarkQueue's throughput cycle on two peers of a first node that hosts the database and
// stays idle (so that neither is the first node), started with the extra environments a and b, each on its own
// queue so that both queues grow alike, and returns their average rates. The sides alternate A B B A A B B A:
// the second phase of a round ran ~5 % slower than the first.
func compareSettings(b *testing.B, envA, envB []string) (rateA, rateB float64) {
	first := startNode(b)
	type side struct {
		node  *node
		queue string
		rate  float64 // msgs/s, averaged over the rounds
	}
	a := &side{node: first.peer(b, envA...), queue: first.createQueue(b, "side-a")}
	c := &side{node: first.peer(b, envB...), queue: first.createQueue(b, "side-b")}
	const rounds = 4
	for round := 1; round <= rounds; round++ {
		order := []*side{a, c}
		if round%2 == 0 {
			order = []*side{c, a}
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
		b.Logf("round %d: %v %.0f msgs/s, %v %.0f msgs/s", round, envA, rates[0], envB, rates[1])
	}
	return a.rate, c.rate
}
