package persistence

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Acknowledging, and the other statements on receipts (sql/messages/ack.sql).
var (
	messagesDelete           = stmt("messages.delete")
	messagesDeleteOrdered    = stmt("messages.delete_ordered")
	messagesUpdateVisibility = stmt("messages.update_visibility")
	messagesNegative         = stmt("messages.negative")
	messagesExisting         = stmt("messages.existing")
	messagesDeleteBodies     = stmt("messages.delete_bodies")
)

// Delete acknowledges the receipts' messages and reports, per receipt, whether it deleted the message, and how
// many ordered groups' next messages became visible. Receipts of ordered messages take their groups' locks
// first, in the same round trip (a batch is one implicit transaction).
func (r *Messages) Delete(ctx context.Context, queueID string, receipts []Receipt) (deleted []bool, unblocked int, err error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, 0, err
	}
	ordered := slices.ContainsFunc(receipts, func(rc Receipt) bool { return rc.Ordered && !rc.DLQ })
	if r.deletes != nil {
		res, err := r.deletes.do(ctx, ackKey{queueNo: no, queueID: queueID, ordered: ordered}, receipts)
		return res.deleted, res.unblocked, interpretError("deleting messages", err)
	}
	done, unblocked, err := r.deleteReceipts(ctx, no, queueID, receipts, ordered)
	if err != nil {
		return nil, 0, interpretError("deleting messages", err)
	}
	return done.of(receipts), unblocked, nil
}

// ackKey groups the acknowledgements that can share a transaction: a queue's (its id names the groups' locks),
// those with receipts of ordered messages apart from the others, which take no lock and run the plain delete.
type ackKey struct {
	queueNo int64
	queueID string
	ordered bool
}

// ackResult is one acknowledgement's outcome in a coalesced batch: per receipt whether it deleted the message,
// and how many ordered groups' next messages the batch made visible (the batch's, not the call's: a caller that
// sees some wakes a waiter).
type ackResult struct {
	deleted   []bool
	unblocked int
}

// acknowledge deletes the messages of concurrent acknowledgements (coalescer) in one transaction — with ordered
// receipts, under the union of their groups' locks, unblocking each group's next message — and reports per
// receipt whether it deleted the message. A message whose receipt two of them hold is deleted once, and reported
// deleted to both; a stale receipt of it (an older lease) is not.
func (r *Messages) acknowledge(ctx context.Context, key ackKey, items [][]Receipt) ([]ackResult, error) {
	all := items[0]
	if len(items) > 1 {
		all = slices.Concat(items...)
	}
	done, unblocked, err := r.deleteReceipts(ctx, key.queueNo, key.queueID, all, key.ordered)
	if err != nil {
		return nil, err
	}
	out := make([]ackResult, len(items))
	for i, receipts := range items {
		out[i] = ackResult{deleted: done.of(receipts), unblocked: unblocked}
	}
	return out, nil
}

// deletedSet holds the (group, id, lease) of the messages an acknowledgement deleted.
type deletedSet map[receiptKey]bool

// receiptKey names one lease of one group's copy of a message: a receipt.
type receiptKey struct {
	group     int32
	id, lease int64
}

// of reports, per receipt, whether it deleted its message.
func (d deletedSet) of(receipts []Receipt) []bool {
	out := make([]bool, len(receipts))
	for i, rc := range receipts {
		out[i] = d[receiptKey{rc.GroupNo, rc.ID, rc.LeaseID}]
	}
	return out
}

// deleteReceipts runs the acknowledgement statement for receipts. With ordered
// receipts (queueID names their groups' locks) it takes the groups' locks first and unblocks each group's next
// message, in the same round trip (a batch is one implicit transaction); unblocked counts those.
func (r *Messages) deleteReceipts(ctx context.Context, queueNo int64, queueID string, receipts []Receipt,
	ordered bool) (done deletedSet, unblocked int, err error) {
	err = r.sendRetrying(ctx, func(batch *pgx.Batch) {
		unblocked = 0
		query := messagesDelete
		if ordered {
			groups, ids, _, _ := receiptArrays(receipts)
			messagesLockReceiptGroups.queue(batch, arg{"queue_id", queueID}, arg{"queue_no", queueNo},
				arg{"group_nos", groups}, arg{"ids", ids})
			query = messagesDeleteOrdered
		}
		r.useGenericPlans(batch)
		done = queueDelete(batch, query, queueNo, receipts, &unblocked)
	})
	return done, unblocked, err
}

// queueDelete queues an acknowledgement statement on batch (messagesDelete for plain receipts; after the groups'
// locks, messagesDeleteOrdered, whose rows also name each ordered group's next message made visible: counted in
// unblocked), and the deletion of the bodies of shared messages whose last copy it deletes. The returned set
// fills in with the messages it deleted as the batch's results are read.
func queueDelete(batch *pgx.Batch, query *statement, queueNo int64, receipts []Receipt, unblocked *int) deletedSet {
	groups, ids, leases, dlqs := receiptArrays(receipts)
	done := make(deletedSet, len(receipts))
	query.queue(batch, arg{"queue_no", queueNo}, arg{"lease_ids", leases}, arg{"group_nos", groups}, arg{"ids", ids},
		arg{"dlqs", dlqs}).Query(func(rows pgx.Rows) error {
		var g int32
		var id, lease int64
		var next bool // always false from messagesDelete
		_, err := pgx.ForEachRow(rows, []any{&g, &id, &next, &lease}, func() error {
			if next {
				*unblocked++
			} else {
				done[receiptKey{g, id, lease}] = true
			}
			return nil
		})
		return err
	})
	queueDeleteBodies(batch, queueNo, receipts)
	return done
}

// queueDeleteBodies queues, after an acknowledgement in the same transaction, the deletion of the bodies of the
// receipts' shared messages whose last copy it was.
func queueDeleteBodies(batch *pgx.Batch, queueNo int64, receipts []Receipt) {
	if sharedIDs := sharedOf(receipts); len(sharedIDs) > 0 {
		messagesDeleteBodies.queue(batch, arg{"queue_no", queueNo}, arg{"ids", sharedIDs})
	}
}

// sharedOf returns the ids of the receipts' messages whose content is stored once for several groups.
func sharedOf(receipts []Receipt) []int64 {
	var ids []int64
	for _, rc := range receipts {
		if rc.Shared {
			ids = append(ids, rc.ID)
		}
	}
	return ids
}

// UpdateVisibility moves the leases' visible_at to now()+seconds[i]; it returns the new visible_at per receipt
// (nil where the receipt no longer holds the lease).
func (r *Messages) UpdateVisibility(ctx context.Context, queueID string, receipts []Receipt, seconds []int32) ([]*time.Time, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	groups, ids, leases, dlqs := receiptArrays(receipts)
	rows, err := messagesUpdateVisibility.query(ctx, r.pool, arg{"queue_no", no}, arg{"lease_ids", leases},
		arg{"group_nos", groups}, arg{"ids", ids}, arg{"dlqs", dlqs}, arg{"seconds", seconds})
	if err != nil {
		return nil, interpretError("updating messages", err)
	}
	got := map[receiptKey]time.Time{}
	var g int32
	var id, lease int64
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&g, &id, &lease, &at}, func() error { got[receiptKey{g, id, lease}] = at.UTC(); return nil }); err != nil {
		return nil, interpretError("updating messages", err)
	}
	out := make([]*time.Time, len(receipts))
	for i, rc := range receipts {
		if t, ok := got[receiptKey{rc.GroupNo, rc.ID, rc.LeaseID}]; ok {
			out[i] = &t
		}
	}
	return out, nil
}

// Existing reports which receipts' messages still exist (whatever their lease).
func (r *Messages) Existing(ctx context.Context, queueID string, receipts []Receipt) ([]bool, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	groups, ids, _, _ := receiptArrays(receipts)
	rows, err := messagesExisting.query(ctx, r.pool, arg{"group_nos", groups}, arg{"ids", ids}, arg{"queue_no", no})
	if err != nil {
		return nil, interpretError("looking up messages", err)
	}
	found := map[[2]int64]bool{}
	var g int32
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&g, &id}, func() error { found[[2]int64{int64(g), id}] = true; return nil }); err != nil {
		return nil, interpretError("looking up messages", err)
	}
	out := make([]bool, len(receipts))
	for i, rc := range receipts {
		out[i] = found[[2]int64{int64(rc.GroupNo), rc.ID}]
	}
	return out, nil
}

func receiptArrays(receipts []Receipt) (groups []int32, ids, leases []int64, dlqs []bool) {
	for _, rc := range receipts {
		groups, ids, leases, dlqs = append(groups, rc.GroupNo), append(ids, rc.ID), append(leases, rc.LeaseID), append(dlqs, rc.DLQ)
	}
	return
}
