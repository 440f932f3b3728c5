package messaging

import (
	"context"
	"sync"
	"time"
)

// notifyThrottle limits NOTIFYs to one per queue per window: a put inside the window skips its NOTIFY and a
// trailing NOTIFY goes out at the end of the window, so no wake-up is lost and a busy queue does not flood the
// LISTEN connections of the other nodes.
type notifyThrottle struct {
	window time.Duration
	send   func(ctx context.Context, queueID string) error

	mu      sync.Mutex
	last    map[string]time.Time
	pending map[string]bool
}

func newNotifyThrottle(window time.Duration, send func(ctx context.Context, queueID string) error) *notifyThrottle {
	return &notifyThrottle{window: window, send: send, last: map[string]time.Time{}, pending: map[string]bool{}}
}

// take reports whether this put should carry the NOTIFY itself (in its own transaction).
func (t *notifyThrottle) take(queueID string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	last := t.last[queueID]
	if now.Sub(last) >= t.window {
		t.last[queueID] = now
		if len(t.last) > 10000 { // forget idle queues
			for q, at := range t.last {
				if now.Sub(at) > time.Minute {
					delete(t.last, q)
				}
			}
		}
		return true
	}
	if !t.pending[queueID] {
		t.pending[queueID] = true
		time.AfterFunc(t.window-now.Sub(last), func() {
			t.mu.Lock()
			delete(t.pending, queueID)
			t.last[queueID] = time.Now()
			t.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = t.send(ctx, queueID)
		})
	}
	return false
}
