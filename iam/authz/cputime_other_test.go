//go:build !linux

package authz

import "time"

// threadCPUTime is unavailable here; the benchmarks then report wall-clock latency only.
func threadCPUTime() time.Duration { return 0 }
