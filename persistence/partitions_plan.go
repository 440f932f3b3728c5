package persistence

import "slices"

// assignmentChange is one partition's new assignment.
type assignmentChange struct {
	Partition  int32
	Owner      string
	Generation int64
	NextOwner  string // a handover asked of Owner ("" = none)
}

// planAssignment decides a PARTITION group's assignment: a balanced target (each live consumer, in registration
// order, gets ⌊n/m⌋ or ⌈n/m⌉ partitions; with more consumers than partitions the last ones stand by) that keeps
// as many partitions as possible where they are (sticky: a consumer keeps up to its share of what it owns, and
// the larger shares go to those that own the most). Then, per partition whose owner must change:
//   - unowned, or its owner is no longer live: it moves at once;
//   - its owner is the caller: the caller releases it now (it is asking for its next batch, so it is done with
//     what it read), and it moves at once;
//   - its owner is another live consumer: a handover is asked (next_owner); the partition moves when the owner
//     calls next, or anyway once the handover's grace is over (overdue).
//
// Every partition that moves gets the group's next generation (one more than the highest), so commits of what its
// previous owner read are refused. states is in partition order; overdue says, per partition, that its handover's
// grace is over. It returns the changes only.
func planAssignment(states []PartitionState, overdue []bool, members []string, caller string) []assignmentChange {
	live := make(map[string]int, len(members)) // member → registration rank
	for i, m := range members {
		live[m] = i
	}
	target := targetAssignment(states, members, live)
	var generation int64
	for _, s := range states {
		generation = max(generation, s.Generation)
	}
	generation++
	var changes []assignmentChange
	for i, s := range states {
		want := target[i]
		switch {
		case s.Owner == want:
			if s.NextOwner != "" { // a handover no longer needed
				changes = append(changes, assignmentChange{Partition: s.Partition, Owner: s.Owner, Generation: s.Generation})
			}
		case s.Owner == "" || !isLive(live, s.Owner) || s.Owner == caller || (s.NextOwner == want && overdue[i]):
			changes = append(changes, assignmentChange{Partition: s.Partition, Owner: want, Generation: generation})
		case s.NextOwner != want:
			changes = append(changes, assignmentChange{Partition: s.Partition, Owner: s.Owner, Generation: s.Generation, NextOwner: want})
		}
	}
	return changes
}

func isLive(live map[string]int, id string) bool {
	_, ok := live[id]
	return ok
}

// targetAssignment is the owner each partition should have ("" when there is no live consumer).
func targetAssignment(states []PartitionState, members []string, live map[string]int) []string {
	n, m := len(states), len(members)
	target := make([]string, n)
	if m == 0 {
		return target
	}
	owned := make(map[string][]int, m) // member → the partitions it owns now (indexes, ascending)
	for i, s := range states {
		if isLive(live, s.Owner) {
			owned[s.Owner] = append(owned[s.Owner], i)
		}
	}
	// Shares: n/m each, and one more for n%m of them — those that own the most now, then by registration.
	byHolding := slices.Clone(members)
	slices.SortStableFunc(byHolding, func(a, b string) int { return len(owned[b]) - len(owned[a]) })
	share := make(map[string]int, m)
	for i, id := range byHolding {
		share[id] = n / m
		if i < n%m {
			share[id]++
		}
	}
	taken := make([]bool, n)
	for _, id := range members {
		for _, i := range owned[id] {
			if share[id] == 0 {
				break
			}
			target[i], taken[i] = id, true
			share[id]--
		}
	}
	next := 0
	for _, id := range members {
		for ; share[id] > 0; share[id]-- {
			for taken[next] {
				next++
			}
			target[next], taken[next] = id, true
		}
	}
	return target
}
