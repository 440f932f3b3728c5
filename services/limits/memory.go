package limits

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Returning memory after a burst. The Go runtime keeps freed heap for reuse and gives it back to the OS slowly,
// and ferry collects at 4× its live heap (GOGC=400, cmd/ferry): after a burst of large requests the process can
// keep hundreds of MiB it no longer uses. When a refresh finds more than freeHeapMax of the heap free and not yet
// returned, few request bytes held and the node quiet (it allocated less than freeHeapMax since the previous
// refresh), it collects and returns the free heap at once (debug.FreeOSMemory), at most once per freeEvery.
//
// A busy node keeps its free heap: it allocates it again within milliseconds, and returning it forced a
// collection and the page faults of taking it back (in a drain of 16,000 msg/s, FreeOSMemory every 10 s was a
// tenth of ferry's sampled CPU).
const (
	freeHeapMax = 16 << 20
	freeEvery   = 10 * time.Second
)

// freeMu serialises returnMemory: a refresh called at once (Refresh) may run beside the loop's, and several nodes
// of one process (tests) share the runtime it reads and frees.
var freeMu sync.Mutex

// heapSample reads the runtime's free heap not yet returned, and the bytes it has allocated since it started.
func heapSample() (free, allocated uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		free = sample[0].Value.Uint64()
	}
	if sample[1].Value.Kind() == metrics.KindUint64 {
		allocated = sample[1].Value.Uint64()
	}
	return free, allocated
}

// returnMemory runs on each refresh.
func (s *Service) returnMemory() {
	freeMu.Lock()
	defer freeMu.Unlock()
	free, allocated := heapSample()
	allocatedSince := allocated - s.lastAllocated
	s.lastAllocated = allocated
	if !shouldReturnMemory(free, allocatedSince, s.inFlight.used.Load(), time.Since(s.lastFree)) {
		return
	}
	s.lastFree = time.Now()
	debug.FreeOSMemory()
}

// shouldReturnMemory decides from the free heap not yet returned, the bytes allocated since the previous
// refresh, the request bytes held and the time since memory was last returned.
func shouldReturnMemory(free, allocatedSince uint64, inFlight int64, sinceLast time.Duration) bool {
	return free >= freeHeapMax && allocatedSince < freeHeapMax && inFlight <= freeHeapMax && sinceLast >= freeEvery
}
