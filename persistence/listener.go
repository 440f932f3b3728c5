package persistence

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferry-mq/ferry/internal/startstop"
)

// Listener holds the process's one LISTEN connection (on MessagesChannel and ConfigChannel) and hands every
// notification to a callback. It reconnects with backoff; OnReconnect runs after each reconnection so that callers
// can recover notifications they may have missed while disconnected.
type Listener struct {
	URL         string
	OnNotify    func(Notification)
	OnReconnect func()
	Logger      *slog.Logger

	loop  startstop.Base
	mu    sync.Mutex // guards ready
	ready chan struct{}
}

// Start connects in the background. Safe to call twice.
func (l *Listener) Start(ctx context.Context) {
	// l.mu is held across the start so that Ready never returns the channel of a loop other than the running one.
	l.mu.Lock()
	defer l.mu.Unlock()
	ready := make(chan struct{})
	if l.loop.Start(ctx, func(ctx context.Context) { l.run(ctx, ready) }) {
		l.ready = ready
	}
}

// Ready is closed once the first LISTEN is in place.
func (l *Listener) Ready() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ready
}

// Stop disconnects. Safe to call twice.
func (l *Listener) Stop() { l.loop.Stop() }

func (l *Listener) run(ctx context.Context, ready chan struct{}) {
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := l.listen(ctx, func() {
			if first {
				close(ready)
				first = false
			} else if l.OnReconnect != nil {
				l.OnReconnect()
			}
			backoff = 100 * time.Millisecond
		})
		if ctx.Err() != nil {
			return
		}
		l.logger().Warn("LISTEN connection lost; reconnecting", "error", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff + time.Duration(rand.Int64N(int64(backoff)))):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (l *Listener) listen(ctx context.Context, connected func()) error {
	conn, err := pgx.Connect(ctx, l.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, ch := range []string{MessagesChannel, ConfigChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if parsed, ok := ParseNotification(n.Channel, n.Payload); ok {
			l.OnNotify(parsed)
		} else {
			l.logger().Warn("ignoring a notification of unknown form", "channel", n.Channel, "payload", n.Payload)
		}
	}
}

func (l *Listener) logger() *slog.Logger {
	if l.Logger == nil {
		return slog.Default()
	}
	return l.Logger
}
