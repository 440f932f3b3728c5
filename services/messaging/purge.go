package messaging

import (
	"context"
	"time"

	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/metering"
)

// Redrive moves up to limit DLQ messages of the group back to the queue.
func (s *Service) Redrive(ctx context.Context, tenancyID, queueID, groupRef string, limit int) (int64, error) {
	groupNo, err := s.resolveGroup(ctx, tenancyID, queueID, groupRef)
	if err != nil {
		return 0, err
	}
	n, err := s.messages.Redrive(ctx, queueID, groupNo, limit)
	s.meter.Count(tenancyID, queueID, groupNo, metering.Redriven, n)
	if n > 0 {
		s.waiters.wakeOne(queueID, groupNo, false)
		s.notifier.mark(persistence.MessagesAvailable, queueID)
	}
	return n, err
}

// Purge deletes the messages of a queue in scope in batches, pausing between batches so that a large purge does
// not starve the hot path. It is the work request executor's PurgeFunc; the scope was decided when the purge was
// accepted (persistence.PurgeScopeOf).
func (s *Service) Purge(ctx context.Context, _, queueID string, scope persistence.PurgeScope, progress func(float32)) error {
	const batch = 1000
	defer s.sizes.invalidate(queueID) // the room freed counts at once, not after the next refresh
	// Only what was published before the purge was accepted (scope.UpTo): messages published since are kept, and
	// a queue that is published to faster than it is purged still finishes.
	var done int64
	for {
		n, err := s.messages.PurgeBatch(ctx, queueID, scope, batch)
		if err != nil {
			return err
		}
		done += n
		// A batch comes back short when consumers acknowledged some of its messages meanwhile: only an empty one
		// means done.
		if n == 0 {
			return nil
		}
		progress(float32(min(99, done/batch)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
