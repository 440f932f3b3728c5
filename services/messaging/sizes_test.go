package messaging

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A queue's size is scanned while puts commit around the scan: a put the scan counted is not added again (which
// would refuse puts for bytes counted twice), and one it missed is added on top of its result.
func TestSizeCacheCountsAPutOnce(t *testing.T) {
	type scanResult struct {
		bytes int64
		maxID int64
	}
	scanning, release := make(chan struct{}, 1), make(chan scanResult)
	c := &sizeCache{refresh: time.Hour, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), byQueue: map[string]*queueSize{},
		byTenancy: map[string]int64{},
		scan: func(context.Context, string) (map[string]int64, int64, error) {
			scanning <- struct{}{}
			r := <-release
			return map[string]int64{"": r.bytes}, r.maxID, nil
		}}
	total := func() int64 {
		n, _ := c.get("q", "t", nil)
		return n
	}
	waitLoaded := func() {
		t.Helper()
		require.Eventually(t, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return !c.byQueue["q"].loading
		}, 5*time.Second, time.Millisecond)
	}

	total() // starts the first scan
	<-scanning
	c.add("q", map[string]int64{"": 100}, 10) // committed before the scan's snapshot: the scan counts it
	c.add("q", map[string]int64{"": 50}, 12)  // committed after it: the scan misses it
	release <- scanResult{bytes: 1000, maxID: 10}
	waitLoaded()
	if got := total(); got != 1050 {
		t.Fatalf("after the first scan: %d bytes, want 1,000 scanned + 50 missed", got)
	}

	c.add("q", map[string]int64{"": 7}, 9) // a put that committed before the scan but reports only now
	if got := total(); got != 1050 {
		t.Fatalf("a put the scan counted was added again: %d bytes", got)
	}
	c.add("q", map[string]int64{"": 5}, 13)
	if got := total(); got != 1055 {
		t.Fatalf("a put after the scan: %d bytes, want 1,055", got)
	}
	if got := c.tenancyTotal("t"); got != 1055 {
		t.Fatalf("the tenancy's stored bytes: %d, want its queue's 1,055", got)
	}
}
