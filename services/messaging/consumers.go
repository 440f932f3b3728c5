package messaging

import (
	"context"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/services/apierror"
)

// MaxConsumerID is the longest consumer id (DESIGN section 7: single active consumer).
const MaxConsumerID = 128

// consumersNotifyPrefix marks a ferry_messages notification that announces a change of a queue's consumers (a
// consumer left) rather than new messages: it wakes that queue's standby consumers on every node.
const consumersNotifyPrefix = "consumers:"

// ValidConsumerID checks a consumer id: 1 to 128 letters, digits and . _ : @ ~ - (it appears in a URL path).
func ValidConsumerID(id string) error {
	ok := id != "" && len(id) <= MaxConsumerID
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:@~-", c) >= 0
	}
	if !ok {
		return apierror.InvalidParameter("consumerId: 1 to %d letters, digits and . _ : @ ~ -", MaxConsumerID)
	}
	return nil
}

// Consumer is a live consumer of a consumer group of a single-active-consumer queue.
type Consumer struct {
	ID             string
	GroupID        string
	Running        bool // the active consumer; the others are standby
	Idle           time.Duration
	TimeRegistered time.Time
}

// Consumers lists the live consumers of a consumer group, the active one first. It reads the database, so every
// node answers the same.
func (s *Service) Consumers(ctx context.Context, tenancyID, queueID, groupRef string) ([]Consumer, error) {
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return nil, err
	}
	g, err := s.groups.resolve(ctx, q, groupRef)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.Consumers.List(ctx, queueID, g.No, q.ConsumerLeaseSeconds)
	if err != nil {
		return nil, err
	}
	out := make([]Consumer, len(rows))
	for i, r := range rows {
		out[i] = Consumer{ID: r.ID, GroupID: g.ID, Running: r.Active, Idle: max(0, r.Now.Sub(r.LastSeen)), TimeRegistered: r.TimeRegistered}
	}
	return out, nil
}

// Leave removes a consumer of a consumer group: its unacknowledged messages become visible at once, and the
// standbys (on every node) look again, so that the next one takes over without waiting for a lease to lapse.
func (s *Service) Leave(ctx context.Context, tenancyID, queueID, groupRef, consumerID string) error {
	if err := ValidConsumerID(consumerID); err != nil {
		return err
	}
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return err
	}
	g, err := s.groups.resolve(ctx, q, groupRef)
	if err != nil {
		return err
	}
	found, released, err := s.store.Consumers.Leave(context.WithoutCancel(ctx), queueID, g.No, consumerID)
	if err != nil {
		return err
	}
	if !found {
		return apierror.NotFound("consumerId: consumer %q is not registered in this consumer group", consumerID)
	}
	s.waiters.wakeStandby(queueID)
	s.notifier.mark(consumersNotifyPrefix + queueID)
	if released > 0 {
		s.waiters.wakeOne(queueID, g.No)
		s.notifier.mark(queueID)
	}
	return nil
}
