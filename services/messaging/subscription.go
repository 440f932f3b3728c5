package messaging

import (
	"context"
	"errors"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/metering"
)

// A Subscription is a push consumer's (a watch's) hold on a consumer group: it leases messages to one named
// consumer, waiting for them like a long poll that never times out, and acknowledges, releases and renews them.
// It shares everything with GetMessages — the lease statements, the waiters (a watch and the long polls of its
// group take turns at new messages), ordered message groups and single active consumer — so a group can have
// watches and pollers at once. The WebSocket protocol around it lives in services/push.
type Subscription struct {
	s         *Service
	tenancyID string
	queueID   string // identity: never changes, read by any goroutine
	groupNo   int32
	groupID   string
	// partitioned: a PARTITION group (set at the group's creation, never changed).
	partitioned bool
	// The settings below are refreshed before each lease and read only by the goroutine that calls Lease.
	q             persistence.Queue
	g             group
	consumer      string
	sac           bool // the queue has a single active consumer: leases register and decide first
	channelFilter string
	maxDeliveries int32
	w             *waiter
	standby       atomic.Bool

	// OnStandby, when set, is called by Lease when the consumer becomes a standby (true) or the active consumer
	// (false) of a single-active-consumer queue.
	OnStandby func(standby bool)
}

// SubscribeRequest names the consumer group and the consumer of a subscription.
type SubscribeRequest struct {
	ConsumerGroup string // OCID or displayName; "" = the primary group
	ConsumerID    string // required
	ChannelFilter string // exact channel id, or a prefix ending in '*'; "" = every channel
}

// Subscribe checks the queue, the consumer group and the consumer id, and returns a subscription (it leases
// nothing yet). On a PARTITION group the subscription polls partitions (partition_subscription.go).
func (s *Service) Subscribe(ctx context.Context, tenancyID, queueID string, req SubscribeRequest) (*Subscription, error) {
	if err := ValidConsumerID(req.ConsumerID); err != nil {
		return nil, err
	}
	if err := validChannelFilter(req.ChannelFilter); err != nil {
		return nil, err
	}
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return nil, err
	}
	g, err := s.groups.resolve(ctx, q, req.ConsumerGroup)
	if err != nil {
		return nil, err
	}
	if g.Partitioned && req.ChannelFilter != "" {
		return nil, fault.InvalidParameter("channelFilter: a PARTITION consumer group reads whole partitions (no channel filter)")
	}
	return &Subscription{s: s, tenancyID: tenancyID, queueID: q.ID, groupNo: g.No, groupID: g.ID, partitioned: g.Partitioned, q: q, g: g,
		consumer: req.ConsumerID, sac: q.SingleActiveConsumer,
		channelFilter: req.ChannelFilter, maxDeliveries: g.maxDeliveries(q)}, nil
}

// QueueID, GroupNo, GroupID and ConsumerID identify the subscription.
func (sub *Subscription) QueueID() string    { return sub.queueID }
func (sub *Subscription) GroupNo() int32     { return sub.groupNo }
func (sub *Subscription) GroupID() string    { return sub.groupID }
func (sub *Subscription) ConsumerID() string { return sub.consumer }

// Standby reports whether the consumer waits for its turn (a single active consumer queue's standby).
func (sub *Subscription) Standby() bool { return sub.standby.Load() }

// Lease leases up to n messages (1..MaxPushLease) to the consumer for lease, waiting as long as it takes: it returns
// messages, or ctx's error. While it waits it holds no database connection; on a single-active-consumer queue it
// renews the consumer's registration every third of the queue's consumerLeaseInSeconds, like a waiting
// GetMessages.
func (sub *Subscription) Lease(ctx context.Context, n int, lease time.Duration) ([]Delivered, error) {
	s := sub.s
	req := GetRequest{Limit: min(max(n, 1), MaxPushLease), ChannelFilter: sub.channelFilter, owner: sub.consumer}
	consumer := ""
	if sub.sac {
		consumer = sub.consumer
	}
	visibility := int32(max(lease/time.Second, 1))
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := sub.refresh(ctx); err != nil {
			return nil, err
		}
		got, more, decision, err := s.leaseOnce(ctx, sub.q, sub.g.No, req, visibility, sub.maxDeliveries, consumer, nil)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err // what it leased is the consumer's: released when it shuts down or leaves
		}
		standby := sub.sac && !decision.Active
		if sub.standby.Swap(standby) != standby && sub.OnStandby != nil {
			sub.OnStandby(standby)
		}
		if len(got) > 0 {
			if more && sub.w != nil && !sub.w.standby {
				s.waiters.wakeOne(sub.q.ID, sub.g.No, false) // there may be more: let the next waiter look
			}
			return got, nil
		}
		if sub.w == nil || sub.w.standby != standby {
			sub.Pause()
			// Register, then look once more: a put between the lease and the registration is not missed.
			if standby {
				sub.w = s.waiters.addStandby(sub.q.ID, sub.g.No)
			} else {
				sub.w = s.waiters.add(sub.q.ID, sub.g.No, false)
			}
			continue
		}
		var recheck time.Time
		if sub.sac {
			recheck = time.Now().Add(time.Duration(sub.q.ConsumerLeaseSeconds) * time.Second / 3)
			if until := decision.ActiveUntil; standby && !until.IsZero() && until.Add(takeoverMargin).Before(recheck) {
				recheck = until.Add(takeoverMargin)
			}
		}
		if !s.wait(ctx, sub.w, time.Now().Add(24*time.Hour), recheck) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
}

// refresh picks up the queue's and the group's current settings (from this node's caches) before a lease: a
// watch lives for hours, during which its dead-letter count may change, or its queue or group be deleted
// (ErrGone).
func (sub *Subscription) refresh(ctx context.Context) error {
	q, err := sub.s.queues.active(ctx, sub.tenancyID, sub.queueID)
	if err != nil {
		return goneIfNotFound(err)
	}
	g, err := sub.s.groups.resolve(ctx, q, sub.groupID)
	if err != nil {
		return goneIfNotFound(err)
	}
	sub.q, sub.g, sub.maxDeliveries = q, g, g.maxDeliveries(q)
	return nil
}

// ErrGone: the subscription's queue or consumer group no longer exists (or is being deleted).
var ErrGone = errors.New("the queue or the consumer group no longer exists")

func goneIfNotFound(err error) error {
	if fault.Is(err, fault.KindNotFound) || fault.Is(err, fault.KindIncorrectState) || fault.Is(err, fault.KindConflict) {
		return ErrGone
	}
	return err
}

// Pause takes the subscription out of its group's waiters (it has no room for messages: a wake-up must go to
// another consumer). The next Lease joins them again, at the back.
func (sub *Subscription) Pause() {
	if sub.w != nil {
		sub.s.waiters.remove(sub.w)
		sub.w = nil
	}
}

// Commit acknowledges messages by receipt (each entry succeeds or fails on its own, as in DeleteMessages).
func (sub *Subscription) Commit(ctx context.Context, receipts []string) ([]EntryError, error) {
	return sub.s.Delete(ctx, sub.tenancyID, sub.queueID, sub.groupID, false, receipts)
}

// negativeCode is the form of a negative acknowledgement's code: words in CamelCase with an optional .Detail, or
// a number.
var negativeCode = regexp.MustCompile(`^([A-Z][a-z]*)+(\.[A-Z][a-z]*)?$|^[0-9]+$`)

// Limits of a negative acknowledgement.
const (
	MaxNegativeCode   = 20
	MaxNegativeReason = 1024
)

// ValidNegative checks a negative acknowledgement's code and reason.
func ValidNegative(code, reason string) error {
	if len(code) > MaxNegativeCode || !negativeCode.MatchString(code) {
		return fault.InvalidParameter("code: at most %d characters, CamelCase words with an optional .Detail (Timeout, Invalid.Format) or a number", MaxNegativeCode)
	}
	if len(reason) > MaxNegativeReason {
		return fault.InvalidParameter("reason: at most %d bytes", MaxNegativeReason)
	}
	return nil
}

// Negative releases messages by receipt at once (they are delivered again, to any consumer of the group, with
// their delivery count one higher), recording code and reason on them. Each entry succeeds or fails on its own.
func (sub *Subscription) Negative(ctx context.Context, receipts []string, code, reason string) ([]EntryError, error) {
	if err := ValidNegative(code, reason); err != nil {
		return nil, err
	}
	s := sub.s
	ctx = context.WithoutCancel(ctx)
	decoded, errs := s.decodeReceipts(sub.queueID, sub.groupNo, false, receipts)
	valid, idx := validEntries(decoded, errs)
	if len(valid) == 0 {
		return errs, nil
	}
	released, err := s.messages.Negative(ctx, sub.queueID, valid, code, reason)
	if err != nil {
		return nil, err
	}
	n, err := s.classifyMissed(ctx, sub.queueID, valid, idx, released, errs)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		s.meter.Count(sub.tenancyID, sub.queueID, sub.groupNo, metering.Released, int64(n))
		s.waiters.wakeOne(sub.queueID, sub.groupNo, false)
		s.notifier.mark(persistence.MessagesAvailable, sub.queueID)
	}
	return errs, nil
}

// Renew extends the consumer's leases that end within within, to lease from now.
func (sub *Subscription) Renew(ctx context.Context, lease, within time.Duration) error {
	_, err := sub.s.messages.RenewLeases(ctx, sub.queueID, sub.groupNo, sub.consumer, lease, within)
	return err
}

// Release makes every message the consumer holds visible at once (to the group's other consumers, on every
// node), and returns how many.
func (sub *Subscription) Release(ctx context.Context) (int64, error) {
	n, err := sub.s.messages.ReleaseOwned(context.WithoutCancel(ctx), sub.queueID, sub.groupNo, sub.consumer)
	sub.s.consumersChanged(sub.tenancyID, sub.queueID, sub.groupNo, n)
	return n, err
}

// Shutdown marks the watch session's consumer as leaving (it gives up its place in a single active consumer
// group) and releases what it holds.
func (sub *Subscription) Shutdown(ctx context.Context, sessionID string) (int64, error) {
	sub.Pause()
	if err := sub.s.store.Consumers.Leaving(context.WithoutCancel(ctx), sub.queueID, sub.groupNo, sub.consumer, sessionID); err != nil {
		return 0, err
	}
	return sub.Release(ctx)
}

// Leave ends the subscription: the watch session's registration is marked left and the messages the consumer
// holds (on a PARTITION group: its partitions) are released at once. Safe to call more than once.
func (sub *Subscription) Leave(ctx context.Context, sessionID string) (int64, error) {
	sub.Pause()
	found, n, err := sub.s.store.Consumers.Leave(context.WithoutCancel(ctx), sub.queueID, sub.groupNo, sub.consumer, sessionID)
	if err == nil && sub.Partitioned() {
		err = sub.leavePartitions(ctx, found)
	}
	sub.s.consumersChanged(sub.tenancyID, sub.queueID, sub.groupNo, n)
	return n, err
}
