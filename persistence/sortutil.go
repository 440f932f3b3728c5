package persistence

import (
	"cmp"
	"slices"
)

// sortLeased orders a lease's messages by id (publish order) within their arrival.
func sortLeased(m []LeasedMessage) {
	slices.SortStableFunc(m, func(a, b LeasedMessage) int { return cmp.Compare(a.ID, b.ID) })
}
