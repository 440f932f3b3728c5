//go:build !race

package tests

// raceEnabled reports whether the race detector is on; timing assertions are meaningless under it.
const raceEnabled = false
