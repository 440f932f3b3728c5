package messaging

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// notifier announces "queue has new messages" to the other nodes. Puts only mark their queue dirty (after their
// commit); one goroutine sends the NOTIFYs for all dirty queues in one statement, at most once per window. So no
// put transaction carries a NOTIFY — PostgreSQL serialises the commits of notifying transactions on a global
// lock, which would make every put wait for the others' fsync — and a busy queue costs one NOTIFY per window
// however many puts it takes.
type notifier struct {
	window time.Duration
	send   func(ctx context.Context, queueIDs []string) error
	logger *slog.Logger

	mu      sync.Mutex
	dirty   map[string]struct{}
	signal  chan struct{}
	cancel  context.CancelFunc
	stopped chan struct{}
}

func newNotifier(window time.Duration, send func(ctx context.Context, queueIDs []string) error, logger *slog.Logger) *notifier {
	return &notifier{window: window, send: send, logger: logger, dirty: map[string]struct{}{}, signal: make(chan struct{}, 1)}
}

// mark schedules a NOTIFY for the queue.
func (n *notifier) mark(queueID string) {
	n.mu.Lock()
	n.dirty[queueID] = struct{}{}
	n.mu.Unlock()
	select {
	case n.signal <- struct{}{}:
	default:
	}
}

func (n *notifier) start(ctx context.Context) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cancel != nil {
		return
	}
	ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	n.stopped = make(chan struct{})
	go n.run(ctx)
}

func (n *notifier) stop() {
	n.mu.Lock()
	cancel, stopped := n.cancel, n.stopped
	n.cancel = nil
	n.mu.Unlock()
	if cancel != nil {
		cancel()
		<-stopped
	}
}

func (n *notifier) run(ctx context.Context) {
	defer close(n.stopped)
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.signal:
		}
		n.mu.Lock()
		queues := make([]string, 0, len(n.dirty))
		for q := range n.dirty {
			queues = append(queues, q)
		}
		clear(n.dirty)
		n.mu.Unlock()
		sendCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := n.send(sendCtx, queues); err != nil && ctx.Err() == nil {
			n.logger.Warn("sending wake-ups", "queues", len(queues), "error", err)
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
