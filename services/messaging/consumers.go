package messaging

import (
	"context"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/metering"
)

// ValidConsumerID checks a consumer id: 1 to 128 letters, digits and . _ : @ ~ - (it appears in a URL path).
func ValidConsumerID(id string) error {
	ok := id != "" && len(id) <= openapi.MaxConsumerIDLength
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:@~-", c) >= 0
	}
	if !ok {
		return fault.InvalidParameter("consumerId: 1 to %d letters, digits and . _ : @ ~ -", openapi.MaxConsumerIDLength)
	}
	return nil
}

// WatchLiveness is how long a watch stays live without a heartbeat from its node (the push service heartbeats
// every few seconds): after it, the watch is listed as EXIT and another watch may use its consumer id.
const WatchLiveness = 15 * time.Second

// Statuses of a consumer (GET /consumers).
const (
	StatusRunning = "RUNNING" // receives messages
	StatusStandby = "STANDBY" // waits for its turn (single active consumer)
	StatusLeaving = "LEAVING" // sent Shutdown: nothing more is pushed to it
	StatusExit    = "EXIT"    // left (or its watch died); listed for a while, then removed
)

// Consumer is a registered consumer of a consumer group: a watch (push), or a GetMessages caller of a
// single-active-consumer queue.
type Consumer struct {
	ID      string
	GroupID string
	Status  string
	Watch   bool
	// Partition: a consumer of a PARTITION group, which owns Partitions (none: it stands by) with Lag messages
	// not committed.
	Partition      bool
	Partitions     []int32
	Lag            int64
	Pending        int64  // messages leased to it and not acknowledged
	Window         *int32 // watch: the most unacknowledged messages it may hold
	AutoCommit     bool
	Delivered      int64 // watch: messages pushed to it
	Idle           time.Duration
	TimeRegistered time.Time
}

// GroupConsumers sums a consumer group's consumers (those not EXIT).
type GroupConsumers struct {
	GroupID   string
	Pending   int64
	Delivered int64
	Consumers int
}

// Consumers lists the consumers of a queue's consumer group (groupRef "" = every group), each group's in
// registration order (a single active consumer group's active one first), and a summary per group. It reads the
// database, so every node answers the same.
func (s *Service) Consumers(ctx context.Context, tenancyID, queueID, groupRef string) ([]Consumer, []GroupConsumers, error) {
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return nil, nil, err
	}
	groups, err := s.groups.of(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	var only *int32
	if groupRef != "" {
		g, err := s.groups.resolve(ctx, q, groupRef)
		if err != nil {
			return nil, nil, err
		}
		only, groups = &g.No, []group{g}
	}
	rows, err := s.store.Consumers.ListAll(ctx, queueID, only)
	if err != nil {
		return nil, nil, err
	}
	ids := make(map[int32]string, len(groups))
	summary := make([]GroupConsumers, len(groups))
	index := make(map[int32]int, len(groups))
	for i, g := range groups {
		ids[g.No], index[g.No] = g.ID, i
		summary[i].GroupID = g.ID
	}
	var owners map[string][]persistence.PartitionState // group OCID → partitions
	if q.PartitionCount > 0 {
		if owners, err = s.PartitionStates(ctx, tenancyID, queueID); err != nil {
			return nil, nil, err
		}
	}
	var live, gone []Consumer
	activeSeen := map[int32]bool{}
	lease := time.Duration(q.ConsumerLeaseSeconds) * time.Second
	for _, r := range rows {
		groupID, ok := ids[r.GroupNo]
		if !ok {
			continue // a group deleted meanwhile
		}
		c := Consumer{ID: r.ID, GroupID: groupID, Watch: r.Watch, Pending: r.Pending, Window: r.Window,
			AutoCommit: r.AutoCommit, Delivered: r.Delivered, Idle: max(0, r.Now.Sub(r.LastSeen)), TimeRegistered: r.TimeRegistered.UTC()}
		if r.Watch && r.LastActive != nil {
			c.Idle = max(0, r.Now.Sub(*r.LastActive))
		}
		liveFor := lease
		if r.Watch {
			liveFor = WatchLiveness
		}
		if r.Partition {
			c.Partition = true
			for _, p := range owners[groupID] {
				if p.Owner == r.ID {
					c.Partitions, c.Lag = append(c.Partitions, p.Partition), c.Lag+p.Lag()
				}
			}
		}
		switch {
		case r.LeftAt != nil || r.Now.Sub(r.LastSeen) > liveFor:
			c.Status = StatusExit
		case r.Partition && len(c.Partitions) == 0:
			c.Status = StatusStandby
		case r.Leaving:
			c.Status = StatusLeaving
		case q.SingleActiveConsumer && activeSeen[r.GroupNo]:
			c.Status = StatusStandby
		default:
			c.Status = StatusRunning
			activeSeen[r.GroupNo] = true
		}
		g := &summary[index[r.GroupNo]]
		g.Delivered += c.Delivered
		if c.Status == StatusExit {
			gone = append(gone, c)
			continue
		}
		g.Pending += c.Pending
		g.Consumers++
		live = append(live, c)
	}
	return append(live, gone...), summary, nil
}

// Leave removes a consumer of a consumer group (a watch's node stops pushing to it at its next heartbeat): its
// unacknowledged messages become visible at once, and the standbys (on every node) look again, so that the next
// one takes over without waiting for a lease to lapse.
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
	found, released, err := s.store.Consumers.Leave(context.WithoutCancel(ctx), queueID, g.No, consumerID, "")
	if err != nil {
		return err
	}
	if !found {
		return fault.NotFound("consumerId: consumer %q is not registered in this consumer group", consumerID)
	}
	if g.Partitioned {
		// Its partitions move to the group's other live consumers now, not at their next rebalance.
		if err := s.store.Partitions.Release(context.WithoutCancel(ctx), queueID, g.No, q.PartitionCount,
			q.ConsumerLeaseSeconds, consumerID); err != nil {
			return err
		}
	}
	s.consumersChanged(tenancyID, queueID, g.No, released)
	return nil
}

// consumersChanged wakes the standbys of the queue on every node (one of them may be active now) and, when
// messages were released, a waiter of the group.
func (s *Service) consumersChanged(tenancyID, queueID string, groupNo int32, released int64) {
	s.meter.Count(tenancyID, queueID, groupNo, metering.Released, released)
	s.waiters.wakeStandby(queueID)
	s.readers.wake(queueID)
	if hook := s.consumersHook.Load(); hook != nil {
		(*hook)(queueID) // this node's watches (the NOTIFY is for the other nodes)
	}
	s.notifier.mark(persistence.ConsumersChanged, queueID)
	if released > 0 {
		s.waiters.wakeOne(queueID, groupNo, false)
		s.notifier.mark(persistence.MessagesAvailable, queueID)
	}
}
