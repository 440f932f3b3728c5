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
// returned, and the node holds few request bytes, it collects and returns it at once (debug.FreeOSMemory), at most
// once per freeEvery.
const (
	freeHeapMax = 16 << 20
	freeEvery   = 10 * time.Second
)

// freeMu serialises returnMemory: a refresh called at once (Refresh) may run beside the loop's, and several nodes
// of one process (tests) share the runtime it reads and frees.
var freeMu sync.Mutex

// returnMemory runs on each refresh.
func (s *Service) returnMemory() {
	freeMu.Lock()
	defer freeMu.Unlock()
	if time.Since(s.lastFree) < freeEvery || s.inFlight.used.Load() > freeHeapMax {
		return
	}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 || sample[0].Value.Uint64() < freeHeapMax {
		return
	}
	s.lastFree = time.Now()
	debug.FreeOSMemory()
}
