package messaging

import (
	"context"
	"log/slog"
	"slices"
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
	dirty  map[notifyKey]*pendingChannels
	signal chan struct{}
}

type notifyKey struct {
	kind    persistence.NotificationKind
	queueID string
}

// pendingChannels are the channels a queue's next MessagesAvailable names: those its puts of the window wrote,
// unless another cause marked it too, or they grew past persistence.MaxNotifiedChannels (unnamed: the receivers
// list the queue's channels again).
type pendingChannels struct {
	unnamed  bool
	channels []string
}

func (p *pendingChannels) add(channels map[string]bool) {
	for ch := range channels {
		if p.unnamed {
			return
		}
		if !slices.Contains(p.channels, ch) {
			p.channels = append(p.channels, ch)
			p.unnamed = len(p.channels) > persistence.MaxNotifiedChannels
		}
	}
}

func newNotifier(window time.Duration, send func(ctx context.Context, list []persistence.Notification) error, logger *slog.Logger) *notifier {
	return &notifier{window: window, send: send, logger: logger, dirty: map[notifyKey]*pendingChannels{},
		signal: make(chan struct{}, 1)}
}

// mark schedules a NOTIFY of kind for the queue.
func (n *notifier) mark(kind persistence.NotificationKind, queueID string) {
	n.mu.Lock()
	n.pending(kind, queueID).unnamed = true
	n.mu.Unlock()
	n.wake()
}

// markPut schedules a MessagesAvailable for the queue that names the channels a put wrote.
func (n *notifier) markPut(queueID string, channels map[string]bool) {
	n.mu.Lock()
	n.pending(persistence.MessagesAvailable, queueID).add(channels)
	n.mu.Unlock()
	n.wake()
}

// pending is the entry of (kind, queue) in the window's marks (under mu).
func (n *notifier) pending(kind persistence.NotificationKind, queueID string) *pendingChannels {
	key := notifyKey{kind: kind, queueID: queueID}
	p := n.dirty[key]
	if p == nil {
		p = &pendingChannels{}
		n.dirty[key] = p
	}
	return p
}

func (n *notifier) wake() {
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
		for key, p := range n.dirty {
			note := persistence.Notification{Kind: key.kind, QueueID: key.queueID}
			if !p.unnamed {
				note.Channels = p.channels
			}
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
