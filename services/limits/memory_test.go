package limits

import (
	"runtime"
	"testing"
	"time"
)

func TestShouldReturnMemory(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name             string
		free, allocSince uint64
		inFlight         int64
		sinceLast        time.Duration
		want             bool
	}{
		{"quiet after a burst", 200 * mib, 1 * mib, 0, time.Minute, true},
		{"busy: it allocates again what is free", 200 * mib, 64 * mib, 0, time.Minute, false},
		{"little free", 8 * mib, 0, 0, time.Minute, false},
		{"requests still held", 200 * mib, 0, 32 * mib, time.Minute, false},
		{"returned a moment ago", 200 * mib, 0, 0, time.Second, false},
	} {
		if got := shouldReturnMemory(c.free, c.allocSince, c.inFlight, c.sinceLast); got != c.want {
			t.Errorf("%s: shouldReturnMemory = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestReturnMemoryKeepsABusyHeap: a refresh while the process allocates fast leaves its free heap alone, and one
// after it went quiet returns it.
func TestReturnMemoryKeepsABusyHeap(t *testing.T) {
	s := &Service{}
	s.returnMemory() // records the allocations so far
	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20)) // 64 MiB allocated since the previous refresh
	}
	before := s.lastFree
	s.returnMemory()
	if s.lastFree != before {
		t.Fatal("returned memory while the process was allocating")
	}
	keep = nil
	runtime.GC() // the 64 MiB are free heap now
	free, _ := heapSample()
	if free < freeHeapMax {
		t.Skipf("only %d MiB of the heap free after a collection", free>>20)
	}
	s.returnMemory() // quiet now: nothing allocated since the previous refresh
	if s.lastFree == before {
		t.Fatalf("kept %d MiB free after the process went quiet", free>>20)
	}
	if after, _ := heapSample(); after >= freeHeapMax {
		t.Fatalf("%d MiB of the heap still free after returning it", after>>20)
	}
}
