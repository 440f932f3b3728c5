package messaging

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/internal/startstop"
	"github.com/ferry-mq/ferry/persistence"
)

// notifier announces "queue has new messages" (and the data plane's other events) to the other nodes. Puts only
// mark their queue (after their commit); one goroutine sends the NOTIFYs for all marked queues in one statement, at
// most once per window. So no put transaction carries a NOTIFY — PostgreSQL serialises the commits of notifying
// transactions on a global lock, which would make every put wait for the others' fsync — and a busy queue costs
// one NOTIFY per window however many puts it takes.
type notifier struct {
	window time.Duration
	send   func(ctx context.Context, list []persistence.Notification) error
	logger *slog.Logger

	loop   startstop.Base
	mu     sync.Mutex
	dirty  map[persistence.Notification]struct{}
	signal chan struct{}
}

func newNotifier(window time.Duration, send func(ctx context.Context, list []persistence.Notification) error, logger *slog.Logger) *notifier {
	return &notifier{window: window, send: send, logger: logger, dirty: map[persistence.Notification]struct{}{},
		signal: make(chan struct{}, 1)}
}

// mark schedules a NOTIFY of kind for the queue.
func (n *notifier) mark(kind persistence.NotificationKind, queueID string) {
	n.mu.Lock()
	n.dirty[persistence.Notification{Kind: kind, QueueID: queueID}] = struct{}{}
	n.mu.Unlock()
	select {
	case n.signal <- struct{}{}:
	default:
	}
}

func (n *notifier) start(ctx context.Context) { n.loop.Start(ctx, n.run) }

func (n *notifier) stop() { n.loop.Stop() }

func (n *notifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.signal:
		}
		n.mu.Lock()
		list := make([]persistence.Notification, 0, len(n.dirty))
		for note := range n.dirty {
			list = append(list, note)
		}
		clear(n.dirty)
		n.mu.Unlock()
		sendCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := n.send(sendCtx, list); err != nil && ctx.Err() == nil {
			n.logger.Warn("sending wake-ups", "queues", len(list), "error", err)
		}
		cancel()
		// Coalesce: puts during the window share the next NOTIFY.
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.window):
		}
	}
}
