//go:build race

package ferryctl

// raceEnabled reports whether the race detector is on: ferryctl is then built with it too.
const raceEnabled = true
