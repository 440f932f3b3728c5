package persistence

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// owners applies a plan's changes to states and returns each partition's owner (a handover keeps its owner).
func owners(states []PartitionState, changes []assignmentChange) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = s.Owner
	}
	for _, c := range changes {
		out[c.Partition] = c.Owner
	}
	return out
}

func statesOf(owners ...string) []PartitionState {
	out := make([]PartitionState, len(owners))
	for i, o := range owners {
		out[i] = PartitionState{Partition: int32(i), Owner: o, Generation: 1}
	}
	return out
}

func TestPlanAssignment(t *testing.T) {
	t.Run("first consumer takes everything", func(t *testing.T) {
		s := statesOf("", "", "")
		changes := planAssignment(s, make([]bool, 3), []string{"a"}, "a")
		require.Equal(t, []string{"a", "a", "a"}, owners(s, changes))
		for _, c := range changes {
			require.Equal(t, int64(2), c.Generation)
		}
	})
	t.Run("a joiner asks the owner for one partition; the owner keeps it until it calls", func(t *testing.T) {
		s := statesOf("a", "a", "a")
		changes := planAssignment(s, make([]bool, 3), []string{"a", "b"}, "b")
		require.Equal(t, []assignmentChange{{Partition: 2, Owner: "a", Generation: 1, NextOwner: "b"}}, changes)
		s[2].NextOwner = "b"
		require.Empty(t, planAssignment(s, make([]bool, 3), []string{"a", "b"}, "b"), "asked once")
		changes = planAssignment(s, make([]bool, 3), []string{"a", "b"}, "a")
		require.Equal(t, []assignmentChange{{Partition: 2, Owner: "b", Generation: 2}}, changes, "the owner releases by calling")
	})
	t.Run("an overdue handover moves without the owner", func(t *testing.T) {
		s := statesOf("a", "a", "a")
		s[2].NextOwner = "b"
		changes := planAssignment(s, []bool{false, false, true}, []string{"a", "b"}, "b")
		require.Equal(t, []assignmentChange{{Partition: 2, Owner: "b", Generation: 2}}, changes)
	})
	t.Run("sticky: a third consumer takes one partition from the owner of two", func(t *testing.T) {
		s := statesOf("a", "a", "b")
		got := owners(s, planAssignment(s, make([]bool, 3), []string{"a", "b", "c"}, "a"))
		require.Equal(t, "b", got[2], "b's partition does not move")
		require.ElementsMatch(t, []string{"a", "b", "c"}, got)
	})
	t.Run("a gone owner's partitions move at once", func(t *testing.T) {
		s := statesOf("a", "gone", "b", "gone")
		changes := planAssignment(s, make([]bool, 4), []string{"a", "b"}, "")
		require.Equal(t, []string{"a", "a", "b", "b"}, owners(s, changes))
		require.Len(t, changes, 2)
	})
	t.Run("more consumers than partitions: the last stand by", func(t *testing.T) {
		s := statesOf("", "")
		require.Equal(t, []string{"a", "b"}, owners(s, planAssignment(s, make([]bool, 2), []string{"a", "b", "c"}, "c")))
	})
	t.Run("balanced and exclusive for any count", func(t *testing.T) {
		for n := 1; n <= 9; n++ {
			for m := 1; m <= 5; m++ {
				members := []string{"a", "b", "c", "d", "e"}[:m]
				s := statesOf(make([]string, n)...)
				count := map[string]int{}
				for _, o := range owners(s, planAssignment(s, make([]bool, n), members, "")) {
					require.NotEmpty(t, o)
					count[o]++
				}
				for _, id := range members {
					require.GreaterOrEqual(t, count[id], n/m, "n=%d m=%d", n, m)
					require.LessOrEqual(t, count[id], (n+m-1)/m, "n=%d m=%d", n, m)
				}
			}
		}
	})
	t.Run("no members, nothing changes", func(t *testing.T) {
		require.Empty(t, planAssignment(statesOf("", ""), make([]bool, 2), nil, ""))
	})
}
