// Package maintenance runs ferry's background work: the work request executor (queue delete, purge) and the
// periodic maintainers. Each has Start/Stop that are safe to call twice, and runs safely on several nodes at once
// (work is claimed with SKIP LOCKED or an advisory lock).
package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/internal/startstop"
	"github.com/ferry-mq/ferry/persistence"
)

// PollIntervalDefault is how often the executor looks for work when nobody woke it (work requests created on
// another node are found this way).
const PollIntervalDefault = 2 * time.Second

// PurgeFunc deletes a queue's messages in scope in batches, reporting progress (0..100).
type PurgeFunc func(ctx context.Context, tenancyID, queueID string, scope persistence.PurgeScope, progress func(percent float32)) error

// WorkRequestExecutor claims and executes asynchronous work requests.
type WorkRequestExecutor struct {
	Store        *persistence.Store
	Purge        PurgeFunc // nil: queues have no data to remove
	Logger       *slog.Logger
	PollInterval time.Duration

	loop startstop.Base
	mu   sync.Mutex // guards wake
	wake chan struct{}
}

// Wake makes the executor look for work now.
func (e *WorkRequestExecutor) Wake() {
	select {
	case e.wakeChan() <- struct{}{}:
	default:
	}
}

// wakeChan is made on first use: the zero WorkRequestExecutor is usable, and Wake may come before Start.
func (e *WorkRequestExecutor) wakeChan() chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wake == nil {
		e.wake = make(chan struct{}, 1)
	}
	return e.wake
}

// Start runs the executor until Stop. Calling it twice does nothing.
func (e *WorkRequestExecutor) Start(ctx context.Context) { e.loop.Start(ctx, e.run) }

// Stop ends the loop and waits for the current work request to reach a safe point.
func (e *WorkRequestExecutor) Stop() { e.loop.Stop() }

func (e *WorkRequestExecutor) run(ctx context.Context) {
	wake := e.wakeChan()
	interval := e.PollInterval
	if interval <= 0 {
		interval = PollIntervalDefault
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		for e.RunOnce(ctx) {
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-wake:
		}
	}
}

// RunOnce executes at most one work request and reports whether it found one (tests call it directly).
func (e *WorkRequestExecutor) RunOnce(ctx context.Context) bool {
	w, ok, err := e.Store.WorkRequests.Claim(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.logger().Error("claiming work request", "error", err)
		}
		return false
	}
	if !ok {
		return false
	}
	err = e.execute(ctx, w)
	// The outcome is recorded even when ctx was cancelled mid-way.
	done := context.WithoutCancel(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return false // stopping: another node (or the next start) resumes it after WorkRequestStaleAfter
		}
		e.logger().Error("work request failed", "workRequest", w.ID, "operation", w.OperationType, "error", err)
		if w.OperationType == persistence.OpDeleteQueue {
			_ = e.Store.Queues.SetState(done, w.TenancyID, w.ResourceID, "FAILED", "delete failed; retry the delete")
		}
		_ = e.Store.WorkRequests.Finish(done, w.TenancyID, w.ID, persistence.WorkFailed, err.Error())
		return true
	}
	_ = e.Store.WorkRequests.Finish(done, w.TenancyID, w.ID, persistence.WorkSucceeded, "")
	return true
}

func (e *WorkRequestExecutor) execute(ctx context.Context, w persistence.WorkRequest) error {
	progress := func(percent float32) { _ = e.Store.WorkRequests.Progress(ctx, w.TenancyID, w.ID, min(percent, 99)) }
	switch w.OperationType {
	case persistence.OpDeleteQueue:
		if e.Purge != nil {
			// Everything: the queue and its DLQ, of every consumer group and channel.
			if err := e.Purge(ctx, w.TenancyID, w.ResourceID, persistence.PurgeScope{UpTo: math.MaxInt64}, progress); err != nil {
				return err
			}
		}
		return e.Store.Queues.SetState(ctx, w.TenancyID, w.ResourceID, persistence.StateDeleted, "")
	case persistence.OpPurgeQueue:
		if e.Purge == nil {
			return nil
		}
		return e.Purge(ctx, w.TenancyID, w.ResourceID, persistence.PurgeScopeOf(w.Params), progress)
	}
	return fmt.Errorf("unknown operation %s", w.OperationType)
}

func (e *WorkRequestExecutor) logger() *slog.Logger {
	if e.Logger == nil {
		return slog.Default()
	}
	return e.Logger
}
