// Package startstop is the start/stop base of ferry's background loops (the LISTEN connection, the notifier, the
// maintainer, the work request executor, the watches' heartbeat), modelled on River's rivershared/startstop.
//
// A loop is a function that runs until its context is cancelled. Base runs at most one at a time: Start and Stop
// are safe to call twice, concurrently, and in any order (Stop before Start does nothing), and Stop returns only
// once the loop has returned, so that a stopped component holds no goroutine and no connection.
package startstop

import (
	"context"
	"sync"
)

// Base runs one background loop. The zero value is ready to use; embed it or keep it as a field.
type Base struct {
	// lifecycle serialises Start and Stop. Stop holds it until the loop has returned, so that a Start racing a
	// Stop waits for the old loop to be gone instead of running beside it.
	lifecycle sync.Mutex

	mu      sync.Mutex // guards the fields below; never held while waiting, so that a loop may call Started/Stopped
	cancel  context.CancelFunc
	started chan struct{} // closed when a loop starts; made early when Started is called before Start
	stopped chan struct{} // closed when the running loop returns; nil when no loop runs
}

// Start runs run in a new goroutine unless a loop is already running, and reports whether it did. run's context
// keeps ctx's values but not its cancellation or deadline: a loop started for a request outlives the request, and
// ends only at Stop.
func (b *Base) Start(ctx context.Context, run func(ctx context.Context)) bool {
	b.lifecycle.Lock()
	defer b.lifecycle.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped != nil {
		return false
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopped := make(chan struct{})
	b.cancel, b.stopped = cancel, stopped
	if b.started == nil {
		b.started = make(chan struct{})
	}
	close(b.started)
	go func() {
		defer close(stopped)
		run(ctx)
	}()
	return true
}

// Stop cancels the loop's context and waits for the loop to return. Safe to call twice, concurrently, and before
// Start. A loop must not call Stop on its own Base: it would wait for itself.
func (b *Base) Stop() {
	b.lifecycle.Lock()
	defer b.lifecycle.Unlock()
	b.mu.Lock()
	cancel, stopped := b.cancel, b.stopped
	b.mu.Unlock()
	if stopped == nil {
		return
	}
	cancel()
	<-stopped
	b.mu.Lock()
	b.cancel, b.stopped, b.started = nil, nil, nil
	b.mu.Unlock()
}

// Started returns a channel that is closed once a loop is running (a test hook). Called while stopped, it returns
// a channel that the next Start closes.
func (b *Base) Started() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started == nil {
		b.started = make(chan struct{})
	}
	return b.started
}

// Stopped returns a channel that is closed once no loop runs: the running loop's, closed when it returns, or an
// already closed one when none runs (a test hook).
func (b *Base) Stopped() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped == nil {
		return closed
	}
	return b.stopped
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
