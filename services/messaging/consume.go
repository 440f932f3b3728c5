package messaging

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/metering"
)

// MaxPushLease is the most messages a watch leases (and pushes in one frame) at once: a window of 100 fills in one
// lease instead of four. (GetMessages' limits are the API's: openapi.MaxGetLimit and the others.)
const MaxPushLease = 128

// GetRequest is a GetMessages call. Nil pointers take the queue's defaults.
type GetRequest struct {
	ConsumerGroup     string // OCID or displayName; "" = the primary group
	DLQ               bool
	Limit             int
	VisibilitySeconds *int32
	TimeoutSeconds    *int32
	ChannelFilter     string // exact channel id, or a prefix ending in '*'
	// ConsumerID names the caller; required on a single-active-consumer queue (except for DLQ reads), ignored
	// elsewhere.
	ConsumerID string

	owner string // the consumer the messages are leased to (a watch's; see Subscription)
}

// Delivered is a leased message with its receipt. Its Attributes and CustomProperties are the JSON objects they
// were stored as (as json.Marshal wrote them when the message was published), handed on to the consumer as they
// are.
type Delivered struct {
	persistence.LeasedMessage
	Receipt          string
	Traceparent      string
	MessageGroupID   string
	CustomProperties []byte // a JSON object of strings, or nil
}

// storedMetadata is the stored metadata of a message (appendMetadata) as consumers are handed it; the
// deduplication id is not handed back.
type storedMetadata struct {
	Traceparent      string          `json:"traceparent"`
	MessageGroupID   string          `json:"messageGroupId"`
	CustomProperties json.RawMessage `json:"customProperties"`
}

// Get leases up to req.Limit visible messages, waiting up to the timeout for the first one (long poll). A waiting
// call holds no database connection. On a single-active-consumer queue every attempt registers (renews) the
// caller and leases only when it is the group's active consumer; a standby waits for a change of consumers or
// for the active consumer's lease to end, and a waiting consumer renews its own lease every third of it.
func (s *Service) Get(ctx context.Context, tenancyID, queueID string, req GetRequest) ([]Delivered, error) {
	got, _, err := s.GetAcknowledging(ctx, tenancyID, queueID, req, nil)
	return got, err
}

// GetAcknowledging acknowledges (deletes) the messages of receipts, as Delete does, and then leases as Get does,
// in one call: the acknowledgement commits in the lease's transaction (one round trip, one WAL flush) unless it
// holds receipts of ordered messages or the queue has a single active consumer, when it commits on its own just
// before. It answers the leased messages and one outcome per receipt (nil: deleted). Nothing is acknowledged
// when the request is invalid (an error); once the receipts are acknowledged, the long poll may wait.
func (s *Service) GetAcknowledging(ctx context.Context, tenancyID, queueID string, req GetRequest, receipts []string) ([]Delivered, []EntryError, error) {
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return nil, nil, err
	}
	consumer := ""
	if q.SingleActiveConsumer && !req.DLQ {
		if req.ConsumerID == "" {
			return nil, nil, fault.MissingParameter("consumerId: the queue has a single active consumer: name the consumer with consumerId or the X-Ferry-Consumer-Id header")
		}
		if err := ValidConsumerID(req.ConsumerID); err != nil {
			return nil, nil, err
		}
		consumer = req.ConsumerID
	}
	if req.Limit <= 0 {
		req.Limit = 1
	}
	if req.Limit > openapi.MaxGetLimit {
		return nil, nil, fault.InvalidParameter("limit: must be 1 to %d", openapi.MaxGetLimit)
	}
	if err := validChannelFilter(req.ChannelFilter); err != nil {
		return nil, nil, err
	}
	visibility := q.VisibilitySeconds
	if req.VisibilitySeconds != nil {
		visibility = *req.VisibilitySeconds
	}
	timeout := q.TimeoutSeconds
	if req.TimeoutSeconds != nil {
		timeout = *req.TimeoutSeconds
	}
	g, err := s.groups.resolve(ctx, q, req.ConsumerGroup)
	if err != nil {
		return nil, nil, err
	}
	if err := g.notPartitioned(); err != nil {
		return nil, nil, err
	}
	maxDeliveries := g.maxDeliveries(q)
	if req.DLQ {
		maxDeliveries = 0
	}
	deadline := time.Now().Add(time.Duration(timeout) * time.Second)
	var acks *pendingAcks
	if len(receipts) > 0 {
		acks = s.newPendingAcks(tenancyID, queueID, g.No, req.DLQ, receipts)
		if consumer != "" || acks.ordered() {
			// Not in the lease's transaction: the ordered groups' locks and unblocking, and the consumers'
			// decision, are Delete's and LeaseAsConsumer's own.
			if err := acks.deleteNow(ctx, s); err != nil {
				return nil, nil, err
			}
		}
	}

	var w *waiter
	defer func() {
		if w != nil {
			s.waiters.remove(w)
		}
	}()
	if consumer == "" && timeout > 0 {
		// Registered before the first lease, a call that finds nothing waits at once: a put committed after
		// this wakes it (or, when it was leasing meanwhile, makes it look again).
		w = s.waiters.add(queueID, g.No, req.DLQ)
	}
	for {
		got, more, decision, err := s.leaseOnce(ctx, q, g.No, req, visibility, maxDeliveries, consumer, acks)
		if err != nil {
			return nil, nil, err
		}
		if acks != nil && !acks.done {
			// The lease did not run (no channel to lease from).
			if err := acks.deleteNow(ctx, s); err != nil {
				return nil, nil, err
			}
		}
		if len(got) > 0 && ctx.Err() != nil {
			s.releaseUnanswered(tenancyID, queueID, req.DLQ, got)
			return nil, nil, ctx.Err()
		}
		if len(got) > 0 {
			if more && w != nil && !w.standby {
				s.waiters.wakeOne(queueID, g.No, req.DLQ) // there may be more: let the next waiter look
			}
			return acks.answer(ctx, s, got)
		}
		if timeout == 0 || !time.Now().Before(deadline) {
			return acks.answer(ctx, s, []Delivered{})
		}
		standby := consumer != "" && !decision.Active
		if w == nil || w.standby != standby {
			if w != nil {
				s.waiters.remove(w)
			}
			// Register, then look once more: a put between the first lease and the registration is not missed.
			if standby {
				w = s.waiters.addStandby(queueID, g.No)
			} else {
				w = s.waiters.add(queueID, g.No, req.DLQ)
			}
			continue
		}
		var recheck time.Time
		if consumer != "" {
			recheck = time.Now().Add(time.Duration(q.ConsumerLeaseSeconds) * time.Second / 3)
			if until := decision.ActiveUntil; standby && !until.IsZero() && until.Add(takeoverMargin).Before(recheck) {
				recheck = until.Add(takeoverMargin)
			}
		}
		if !s.wait(ctx, w, deadline, recheck) {
			return acks.answer(ctx, s, []Delivered{})
		}
	}
}

// statementTimeout bounds a lease, which its caller's context does not (see leaseOnce).
const statementTimeout = 30 * time.Second

// releaseUnanswered makes messages leased for a GetMessages whose caller went away visible again at once (their
// delivery count stays raised, as for any receive).
func (s *Service) releaseUnanswered(tenancyID, queueID string, dlq bool, got []Delivered) {
	receipts := make([]persistence.Receipt, len(got))
	zero := make([]int32, len(got))
	for i, m := range got {
		receipts[i] = persistence.Receipt{GroupNo: m.GroupNo, ID: m.ID, LeaseID: m.LeaseID, DLQ: dlq}
	}
	ctx, cancel := context.WithTimeout(context.Background(), statementTimeout)
	defer cancel()
	if _, err := s.messages.UpdateVisibility(ctx, queueID, receipts, zero); err != nil {
		s.logger.Warn("releasing messages leased for a caller that went away", "queue", queueID, "messages", len(got), "error", err)
		return
	}
	s.meter.Count(tenancyID, queueID, got[0].GroupNo, metering.Released, int64(len(got)))
	s.waiters.wakeOne(queueID, got[0].GroupNo, dlq)
	s.notifier.mark(persistence.MessagesAvailable, queueID)
}

// takeoverMargin is how long after the active consumer's lease ends a standby looks again (clock reads differ
// slightly between the database and this node).
const takeoverMargin = 20 * time.Millisecond

// wait blocks until a wake-up, the fallback poll, recheck (when set), or the deadline; it reports whether to lease
// again.
func (s *Service) wait(ctx context.Context, w *waiter, deadline, recheck time.Time) bool {
	for {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return false
		}
		next := min(remaining, jitter(s.cfg.PollInterval))
		if !recheck.IsZero() {
			untilRecheck := time.Until(recheck)
			if untilRecheck <= 0 {
				return true
			}
			next = min(next, untilRecheck)
		}
		timer := time.NewTimer(next)
		select {
		case <-w.wake:
			timer.Stop()
			return true
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-timer.C:
			if time.Until(deadline) <= 0 {
				return false
			}
			if !recheck.IsZero() && !time.Now().Before(recheck) {
				return true
			}
			// A standby has nothing to poll for: new messages are not its to take.
			if !w.standby && s.waiters.mayPoll(w.key, s.cfg.PollInterval/2) {
				return true
			}
		}
	}
}

// leaseOnce runs the lease statement (again, when it only moved messages to the DLQ) and signs the receipts. With
// a consumer (single active consumer), the lease registers it and decides first, in the same transaction. more
// reports that visible messages may be left: the lease was full, or it read only some of the channels. (A lease
// that took fewer than it asked for took every message visible to it; those committed since woke a waiter.)
//
// The lease runs to its end even when ctx ends meanwhile: a statement cancelled in flight can still commit after
// its caller has gone (it is on its way to PostgreSQL when pgx gives up on it), leasing messages to no one until
// their visibility timeout. Run to its end, it returns what it leased, and a caller whose ctx has ended releases
// it (a GetMessages: releaseUnanswered; a watch: its consumer, when it shuts down or leaves).
func (s *Service) leaseOnce(ctx context.Context, q persistence.Queue, groupNo int32, req GetRequest, visibility, maxDeliveries int32,
	consumer string, acks *pendingAcks) (_ []Delivered, more bool, _ persistence.ConsumerDecision, _ error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statementTimeout)
	defer cancel()
	var decision persistence.ConsumerDecision
	key := channelKey{queueID: q.ID, groupNo: groupNo, dlq: req.DLQ}
	// The active consumer takes every channel in publish order: no channel list to rotate through.
	allChannels := consumer != "" && req.ChannelFilter == ""
	var channels []string
	if !allChannels {
		var err error
		if channels, err = s.channels.pick(ctx, key, req.ChannelFilter); err != nil {
			return nil, false, decision, err
		}
		if len(channels) == 0 && consumer == "" {
			return nil, false, decision, nil
		}
	}
	for attempt := 0; attempt < 3; attempt++ {
		leaseID := newLeaseID()
		lease := persistence.LeaseRequest{
			QueueID: q.ID, GroupNo: groupNo, DLQ: req.DLQ, Channels: channels, Limit: req.Limit,
			VisibilitySeconds: visibility, LeaseID: leaseID, MaxDeliveries: maxDeliveries, Owner: req.owner,
		}
		var leased []persistence.LeasedMessage
		var err error
		if consumer != "" {
			decision, leased, err = s.messages.LeaseAsConsumer(ctx, persistence.ConsumerLeaseRequest{
				LeaseRequest: lease, Consumer: consumer, ConsumerLeaseSeconds: q.ConsumerLeaseSeconds, AllChannels: allChannels,
			})
			if err == nil && decision.TookOver {
				s.meter.Count(q.TenancyID, q.ID, groupNo, metering.Released, decision.Released)
				s.logger.Info("single active consumer took over", "queue", q.ID, "group", groupNo, "consumer", consumer,
					"released", decision.Released)
			}
		} else if acks != nil && !acks.done {
			lease.Acknowledge = acks.valid
			var deleted []bool
			leased, deleted, err = s.messages.LeaseAcknowledging(ctx, lease)
			if err == nil {
				acks.deleted, acks.done = deleted, true
			}
		} else {
			leased, err = s.messages.Lease(ctx, lease)
		}
		if err != nil {
			return nil, false, decision, err
		}
		more = len(leased) >= req.Limit || len(channels) >= channelsPerLease
		out := make([]Delivered, 0, len(leased))
		dead, unblocked := 0, false
		for _, m := range leased {
			if m.DeadLettered {
				dead++
				unblocked = unblocked || m.MessageGroup != nil // its group's next message became visible
				continue
			}
			d := Delivered{LeasedMessage: m}
			d.Receipt = s.receipts.Encode(q.ID, persistence.Receipt{GroupNo: m.GroupNo, ID: m.ID, LeaseID: m.LeaseID, DLQ: req.DLQ,
				Ordered: m.MessageGroup != nil && !req.DLQ, Shared: m.Shared})
			if len(m.Metadata) > 0 {
				var meta storedMetadata
				if json.Unmarshal(m.Metadata, &meta) == nil {
					d.Traceparent, d.MessageGroupID, d.CustomProperties = meta.Traceparent, meta.MessageGroupID, meta.CustomProperties
				}
			}
			out = append(out, d)
		}
		if dead > 0 {
			s.meter.Count(q.TenancyID, q.ID, groupNo, metering.DeadLettered, int64(dead))
			s.waiters.wakeOne(q.ID, groupNo, true) // a reader of the DLQ here, and on other nodes:
			s.notifier.mark(persistence.DeadLettered, q.ID)
		}
		if unblocked {
			s.waiters.wakeOne(q.ID, groupNo, false)
			s.notifier.mark(persistence.MessagesAvailable, q.ID)
		}
		if len(out) > 0 {
			s.meter.Count(q.TenancyID, q.ID, groupNo, metering.Delivered, int64(len(out)))
			if !req.DLQ {
				for _, m := range out {
					if m.DeliveryCount == 1 {
						s.meter.DeliveryLatency(ctx, q.TenancyID, time.Since(m.TimeCreated))
					}
				}
			}
			linkProducers(ctx, out)
			return out, more, decision, nil
		}
		if dead == 0 {
			return out, more, decision, nil
		}
	}
	return nil, true, decision, nil
}

// linkProducers links the receive span to each message's producer trace (DESIGN section 9).
func linkProducers(ctx context.Context, msgs []Delivered) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	for _, m := range msgs {
		if m.Traceparent == "" {
			continue
		}
		pctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": m.Traceparent})
		if sc := trace.SpanContextFromContext(pctx); sc.IsValid() {
			span.AddLink(trace.Link{SpanContext: sc})
		}
	}
}
