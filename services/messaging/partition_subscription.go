package messaging

import (
	"context"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/metering"
)

// A watch on a PARTITION group (docs/partitions.md, "Watches") is a member of the group like a long-poll consumer:
// its registration in consumers has kind 'partition' (the push service heartbeats it with the session that owns
// it), the assignment is the one in PostgreSQL, and each poll is the long poll's Fetch. What differs is only the
// transport: the partitions and their messages are pushed as frames, and offsets are committed by frames.

// Partitioned reports whether the subscription is on a PARTITION group: it polls partitions and commits offsets
// (PollPartitions, CommitOffsets), and Lease, Commit and Negative do not apply.
func (sub *Subscription) Partitioned() bool { return sub.partitioned }

// PollPartitions renews the consumer's registration (that of the watch session sessionID, made by OpenWatch), rebalances the group when its consumers changed, and returns its
// partitions with up to limit messages after their committed offsets, waiting as long as it takes (holding no
// connection) until there are messages, or the consumer's partitions or their generations differ from known. It
// returns ctx's error when ctx ends first.
func (sub *Subscription) PollPartitions(ctx context.Context, sessionID string, limit int, known []persistence.PartitionState) (persistence.Fetched, error) {
	s := sub.s
	w := s.readers.add(sub.queueID)
	defer s.readers.remove(sub.queueID, w)
	for {
		if err := ctx.Err(); err != nil {
			return persistence.Fetched{}, err
		}
		if err := sub.refresh(ctx); err != nil {
			return persistence.Fetched{}, err
		}
		req := fetchRequest(sub.q, sub.groupNo, sub.consumer, limit)
		req.SessionID = sessionID
		got, err := s.store.Partitions.Fetch(context.WithoutCancel(ctx), req)
		if err != nil {
			return got, err
		}
		if got.Rebalanced {
			s.partitionsChanged(sub.queueID)
		}
		if len(got.Records) > 0 || !persistence.SameAssignment(known, got.Owned) {
			return got, nil
		}
		select {
		case <-w.wake:
		case <-time.After(jitter(PartitionRecheck)):
		case <-ctx.Done():
			return persistence.Fetched{}, ctx.Err()
		}
	}
}

// CountDelivered counts messages pushed to the consumer (a poll may return messages pushed before, still
// uncommitted: the watch counts only the new ones).
func (sub *Subscription) CountDelivered(n int) {
	sub.s.meter.Count(sub.tenancyID, sub.queueID, sub.groupNo, metering.Delivered, int64(n))
}

// AwaitPartitions waits until the queue's partitions may have news for the consumer (a put, a change of the
// group's consumers, on any node), until other fires, or at most PartitionRecheck; false when ctx ended.
func (sub *Subscription) AwaitPartitions(ctx context.Context, other <-chan struct{}) bool {
	w := sub.s.readers.add(sub.queueID)
	defer sub.s.readers.remove(sub.queueID, w)
	select {
	case <-w.wake:
	case <-other:
	case <-time.After(jitter(PartitionRecheck)):
	case <-ctx.Done():
		return false
	}
	return true
}

// CommitOffsets commits offsets for the consumer, as POST …/partitions/actions/commit does (all or none; 409
// StaleGeneration for a partition it does not own at the given generation).
func (sub *Subscription) CommitOffsets(ctx context.Context, offsets []PartitionOffset) error {
	return sub.s.CommitOffsets(ctx, sub.tenancyID, sub.queueID, sub.groupID, sub.consumer, offsets)
}

// leavePartitions gives up the consumer's partitions when its watch ended: they go to the group's other live
// consumers at once, as with DELETE /consumers/{id}.
func (sub *Subscription) leavePartitions(ctx context.Context, found bool) error {
	if !found {
		return nil // removed meanwhile: DeleteConsumer released its partitions
	}
	err := sub.s.store.Partitions.Release(context.WithoutCancel(ctx), sub.queueID, sub.groupNo, sub.q.PartitionCount,
		sub.q.ConsumerLeaseSeconds, sub.consumer)
	if fault.Is(err, fault.KindNotFound) {
		return nil // the queue is gone
	}
	return err
}
