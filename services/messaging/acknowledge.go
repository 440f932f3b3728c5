package messaging

import (
	"context"
	"slices"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/metering"
)

// EntryError is the outcome of one entry of a batch acknowledge/update: nil on success.
type EntryError = *fault.Error

// decodeReceipts checks each receipt's signature and that it addresses the requested group and queue/DLQ.
func (s *Service) decodeReceipts(queueID string, groupNo int32, dlq bool, receipts []string) ([]persistence.Receipt, []EntryError) {
	out := make([]persistence.Receipt, len(receipts))
	errs := make([]EntryError, len(receipts))
	for i, r := range receipts {
		rc, err := s.receipts.Decode(queueID, r)
		switch {
		case err != nil:
			errs[i] = fault.InvalidParameter("receipt: not a receipt of this queue")
		case rc.GroupNo != groupNo || rc.DLQ != dlq:
			errs[i] = fault.InvalidParameter("receipt: issued for another consumer group or for the %s", map[bool]string{true: "DLQ", false: "queue"}[rc.DLQ])
		default:
			out[i] = rc
		}
	}
	return out, errs
}

// Delete acknowledges messages by receipt. Each entry succeeds or fails on its own: a receipt whose lease was
// replaced by a newer one deletes nothing (409), and one whose message is gone answers 404.
func (s *Service) Delete(ctx context.Context, tenancyID, queueID, groupRef string, dlq bool, receipts []string) ([]EntryError, error) {
	groupNo, err := s.resolveGroup(ctx, tenancyID, queueID, groupRef)
	if err != nil {
		return nil, err
	}
	a := s.newPendingAcks(tenancyID, queueID, groupNo, dlq, receipts)
	if !a.done {
		if err := a.deleteNow(ctx, s); err != nil {
			return nil, err
		}
	}
	_, errs, err := a.answer(ctx, s, nil)
	return errs, err
}

// Update moves the visibility of leased messages: seconds from now (0 releases the message at once).
func (s *Service) Update(ctx context.Context, tenancyID, queueID, groupRef string, dlq bool, receipts []string, seconds []int32) ([]*time.Time, []EntryError, error) {
	groupNo, err := s.resolveGroup(ctx, tenancyID, queueID, groupRef)
	if err != nil {
		return nil, nil, err
	}
	decoded, errs := s.decodeReceipts(queueID, groupNo, dlq, receipts)
	for i, sec := range seconds {
		if errs[i] == nil && (sec < 0 || sec > openapi.MaxVisibilitySeconds) {
			errs[i] = fault.InvalidParameter("visibilityInSeconds: must be 0 to %d", openapi.MaxVisibilitySeconds)
		}
	}
	valid, idx := validEntries(decoded, errs)
	times := make([]*time.Time, len(receipts))
	if len(valid) == 0 {
		return times, errs, nil
	}
	secs := make([]int32, len(valid))
	released := false
	for k, i := range idx {
		secs[k] = seconds[i]
		released = released || seconds[i] == 0
	}
	updated, err := s.messages.UpdateVisibility(ctx, queueID, valid, secs)
	if err != nil {
		return nil, nil, err
	}
	done := make([]bool, len(updated))
	var releases int64
	for k, t := range updated {
		times[idx[k]], done[k] = t, t != nil
		if t != nil && secs[k] == 0 {
			releases++
		}
	}
	s.meter.Count(tenancyID, queueID, groupNo, metering.Released, releases)
	if _, err := s.classifyMissed(ctx, queueID, valid, idx, done, errs); err != nil {
		return nil, nil, err
	}
	if released {
		s.waiters.wakeOne(queueID, groupNo, dlq)
		s.notifier.mark(persistence.MessagesAvailable, queueID)
	}
	return times, errs, nil
}

// classifyMissed reports the outcome of a statement over the valid receipts (done[k]: valid[k] held its lease and
// was applied; idx[k] is its entry): it returns how many were applied, and marks each other entry as a stale
// receipt (the message exists under a newer lease: 409) or a message that is gone (404).
func (s *Service) classifyMissed(ctx context.Context, queueID string, valid []persistence.Receipt, idx []int, done []bool,
	errs []EntryError) (int, error) {
	var missed []persistence.Receipt
	var missedIdx []int
	applied := 0
	for k, ok := range done {
		if ok {
			applied++
		} else {
			missed, missedIdx = append(missed, valid[k]), append(missedIdx, idx[k])
		}
	}
	if len(missed) == 0 {
		return applied, nil
	}
	exists, err := s.messages.Existing(ctx, queueID, missed)
	if err != nil {
		return applied, err
	}
	for k, ok := range exists {
		if ok {
			errs[missedIdx[k]] = fault.Conflict("receipt: the lease expired and the message was leased again; nothing was changed")
		} else {
			errs[missedIdx[k]] = fault.NotFound("receipt: the message no longer exists (already deleted or expired)")
		}
	}
	return applied, nil
}

func validEntries(decoded []persistence.Receipt, errs []EntryError) ([]persistence.Receipt, []int) {
	var valid []persistence.Receipt
	var idx []int
	for i, rc := range decoded {
		if errs[i] == nil {
			valid, idx = append(valid, rc), append(idx, i)
		}
	}
	return valid, idx
}

// pendingAcks are the receipts of a Delete or GetAcknowledging call: decoded, then deleted in the lease's transaction
// (leaseOnce) or on their own (deleteNow), then classified (answer).
type pendingAcks struct {
	tenancyID, queueID string
	groupNo            int32
	errs               []EntryError          // per receipt: invalid ones at once, missed ones by answer
	valid              []persistence.Receipt // the receipts that decoded
	idx                []int                 // valid[k]'s receipt
	deleted            []bool                // per valid receipt, once done
	done               bool                  // the valid receipts were acknowledged
}

func (s *Service) newPendingAcks(tenancyID, queueID string, groupNo int32, dlq bool, receipts []string) *pendingAcks {
	decoded, errs := s.decodeReceipts(queueID, groupNo, dlq, receipts)
	valid, idx := validEntries(decoded, errs)
	return &pendingAcks{tenancyID: tenancyID, queueID: queueID, groupNo: groupNo, errs: errs, valid: valid, idx: idx,
		done: len(valid) == 0}
}

// ordered reports whether a receipt is of an ordered message (its acknowledgement unblocks its group's next).
func (a *pendingAcks) ordered() bool {
	return slices.ContainsFunc(a.valid, func(rc persistence.Receipt) bool { return rc.Ordered && !rc.DLQ })
}

// deleteNow acknowledges the receipts on their own (Delete; GetAcknowledging when the lease cannot take them), to
// its end even if the caller leaves: an acknowledgement that reached us completes.
func (a *pendingAcks) deleteNow(ctx context.Context, s *Service) error {
	ctx = context.WithoutCancel(ctx)
	deleted, unblocked, err := s.messages.Delete(ctx, a.queueID, a.valid)
	if err != nil {
		return err
	}
	a.deleted, a.done = deleted, true
	if unblocked > 0 {
		// The next messages of ordered groups became visible.
		s.waiters.wakeOne(a.queueID, a.groupNo, false)
		s.notifier.mark(persistence.MessagesAvailable, a.queueID)
	}
	return nil
}

// answer classifies the receipts that deleted nothing (stale or gone), counts the acknowledged messages and
// returns the call's answer. a may be nil (a call without receipts).
func (a *pendingAcks) answer(ctx context.Context, s *Service, got []Delivered) ([]Delivered, []EntryError, error) {
	if a == nil {
		return got, nil, nil
	}
	if len(a.valid) > 0 {
		acked, err := s.classifyMissed(context.WithoutCancel(ctx), a.queueID, a.valid, a.idx, a.deleted, a.errs)
		s.meter.Count(a.tenancyID, a.queueID, a.groupNo, metering.Acknowledged, int64(acked))
		if err != nil {
			return nil, nil, err
		}
	}
	return got, a.errs, nil
}
