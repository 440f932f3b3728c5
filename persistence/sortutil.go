package persistence

import (
	"cmp"
	"slices"
)

func sortResults(r []PutResult) {
	slices.SortFunc(r, func(a, b PutResult) int { return cmp.Compare(a.ID, b.ID) })
}

// sortLeased orders a lease's messages by id (publish order) within their arrival.
func sortLeased(m []LeasedMessage) {
	slices.SortStableFunc(m, func(a, b LeasedMessage) int { return cmp.Compare(a.ID, b.ID) })
}
