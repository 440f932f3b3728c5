package persistence

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// The cursor lease's companions (sql/messages/ranges.sql).
var (
	messagesLeasePosition      = stmt("messages.lease_position")
	messagesLeaseLock          = stmt("messages.lease_lock")
	messagesReviveRanges       = stmt("messages.revive_ranges")
	messagesExpiredRangeGroups = stmt("messages.expired_range_groups")
	messagesDeleteEmptyRanges  = stmt("messages.delete_empty_ranges")
)

// leasePick is how a lease statement picks its messages (sql/messages/lease.sql).
type leasePick int

const (
	pickChannels leasePick = iota // several channels, interleaved
	pickOne                       // a single channel
	pickOwners                    // a single channel, an owner per slot (coalesced leases of several watches)
	pickConsumer                  // a single-active-consumer queue, in publish order
	pickCursor                    // a single channel, no owner: fresh messages by the channel's cursor
	leasePicks
)

// leaseVariant is one of the lease statement's variants: how it picks, and whether it dead-letters.
type leaseVariant struct {
	pick       leasePick
	deadLetter bool
}

// Channels and the methods below are the template's view of the variant (lease.sql).
func (v leaseVariant) Channels() bool { return v.pick == pickChannels }

// One: from a single channel.
func (v leaseVariant) One() bool { return v.pick == pickOne }

// Owners: from a single channel, an owner per slot.
func (v leaseVariant) Owners() bool { return v.pick == pickOwners }

// Consumer: as a single-active-consumer queue's active consumer.
func (v leaseVariant) Consumer() bool { return v.pick == pickConsumer }

// Cursor: from a single channel, its fresh messages by the channel's cursor, as ranges.
func (v leaseVariant) Cursor() bool { return v.pick == pickCursor }

// DeadLetter: moves the messages that reached the delivery limit to the DLQ.
func (v leaseVariant) DeadLetter() bool { return v.deadLetter }

// Name is the statement's name: messages.lease, then what it picks (_one, _one_owners, _as_consumer, _cursor),
// then _dead_letter.
func (v leaseVariant) Name() string {
	name := "messages.lease" + [...]string{"", "_one", "_one_owners", "_as_consumer", "_cursor"}[v.pick]
	if v.deadLetter {
		name += "_dead_letter"
	}
	return name
}

// leaseVariantData lists every variant, for the template.
func leaseVariantData() []any {
	var out []any
	for pick := range leasePicks {
		out = append(out, leaseVariant{pick: pick}, leaseVariant{pick: pick, deadLetter: true})
	}
	return out
}

// leaseStatements holds the compiled variants: [pick][deadLetter].
var leaseStatements = func() (out [leasePicks][2]*statement) {
	for pick := range leasePicks {
		for dl := range 2 {
			out[pick][dl] = stmt(leaseVariant{pick: pick, deadLetter: dl == 1}.Name())
		}
	}
	return out
}()

// leaseStatement is the variant's statement.
func leaseStatement(pick leasePick, deadLetter bool) *statement {
	dl := 0
	if deadLetter {
		dl = 1
	}
	return leaseStatements[pick][dl]
}

// Lease leases up to req.Limit messages in one statement (shared with concurrent leases of the same kind: the
// messages' LeaseID then is the one of the first request).
func (r *Messages) Lease(ctx context.Context, req LeaseRequest) ([]LeasedMessage, error) {
	req.Acknowledge = nil
	out, _, err := r.LeaseAcknowledging(ctx, req)
	return out, err
}

// LeaseAcknowledging acknowledges req.Acknowledge (plain receipts: none of an ordered message) and then leases,
// in one transaction: one round trip and one commit (one WAL flush) for both, shared with the concurrent leases
// of the same kind. deleted reports per receipt whether it deleted the message, as Delete does.
//
// A cursor lease (one channel, no owner) is the exception: its transaction holds the group's lease lock until it
// commits, and an acknowledgement's commit waits for its WAL, so together the group's leases would run one WAL
// flush at a time. It acknowledges in a transaction of its own (Delete, coalesced with the other
// acknowledgements), beside the lease.
func (r *Messages) LeaseAcknowledging(ctx context.Context, req LeaseRequest) (_ []LeasedMessage, deleted []bool, err error) {
	if len(req.Acknowledge) > 0 && cursorLease(req) {
		var wg sync.WaitGroup
		var ackErr error
		acks := req.Acknowledge
		wg.Go(func() { deleted, _, ackErr = r.Delete(ctx, req.QueueID, acks) })
		req.Acknowledge = nil
		leased, _, err := r.LeaseAcknowledging(ctx, req)
		wg.Wait()
		return leased, deleted, errors.Join(ackErr, err)
	}
	no, err := r.nums.of(ctx, req.QueueID)
	if err != nil {
		return nil, nil, err
	}
	var res leaseResult
	if r.leases != nil {
		key := leaseKey{queueNo: no, groupNo: req.GroupNo, dlq: req.DLQ, channels: strings.Join(req.Channels, "\x00"),
			visibilitySeconds: req.VisibilitySeconds, maxDeliveries: req.MaxDeliveries}
		if len(req.Channels) != 1 {
			key.owner = req.Owner // owners are dealt out per row by the single-channel lease only
		}
		leases := r.leases
		if len(req.Acknowledge) > 0 {
			leases = r.leasesAcking
		}
		res, err = leases.do(ctx, key, req)
	} else {
		var done deletedSet
		res.leased, done, err = r.lease(ctx, no, req, nil, req.Acknowledge)
		res.deleted = done.of(req.Acknowledge)
	}
	if err != nil {
		return nil, nil, interpretError("leasing messages", err)
	}
	return res.leased, res.deleted, nil
}

// leaseResult is a lease's outcome for one request: what it leased, and per receipt of its Acknowledge whether
// it deleted the message.
type leaseResult struct {
	leased  []LeasedMessage
	deleted []bool
}

// leaseKey groups the leases that can share a statement: everything of LeaseRequest but the limit and lease id.
type leaseKey struct {
	queueNo                          int64
	groupNo                          int32
	dlq                              bool
	channels                         string // NUL-separated (channel ids cannot hold NUL)
	visibilitySeconds, maxDeliveries int32
	owner                            string // of a lease from several channels; "" for a single channel
}

// leaseBatch leases for concurrent requests (coalescer) in one statement, under the first request's lease id,
// and deals the leased messages out in id order, each request up to its limit. Requests of different owners
// (watches) share a single-channel lease that gives each row its request's owner. The requests' receipts to
// acknowledge are deleted first, in the same transaction.
func (r *Messages) leaseBatch(ctx context.Context, key leaseKey, items []LeaseRequest) ([]leaseResult, error) {
	req := items[0]
	var owners []*string // per slot, when the owners differ
	var acks []Receipt
	for _, it := range items {
		acks = append(acks, it.Acknowledge...)
	}
	for _, it := range items[1:] {
		req.Limit += it.Limit
		if it.Owner != req.Owner && owners == nil {
			owners = []*string{}
		}
	}
	if owners != nil {
		for _, it := range items {
			for range it.Limit {
				owners = append(owners, nilIfEmpty(it.Owner))
			}
		}
	}
	leased, done, err := r.lease(ctx, key.queueNo, req, owners, acks)
	if err != nil {
		return nil, err
	}
	out := make([]leaseResult, len(items))
	for i, it := range items {
		n := min(it.Limit, len(leased))
		out[i].leased, leased = leased[:n:n], leased[n:]
		if it.Acknowledge != nil {
			out[i].deleted = done.of(it.Acknowledge)
		}
	}
	return out, nil
}

// lease runs the lease statement; owners (a single channel only) gives the k-th row by id the k-th owner
// instead of req.Owner to every row. acks (plain receipts) are acknowledged first, in the same transaction: done
// holds the messages it deleted.
func (r *Messages) lease(ctx context.Context, no int64, req LeaseRequest, owners []*string, acks []Receipt) (_ []LeasedMessage, done deletedSet, _ error) {
	deadLetter := req.MaxDeliveries > 0 && !req.DLQ
	pick, owner := pickChannels, arg{"owner", nilIfEmpty(req.Owner)}
	switch {
	case owners != nil:
		pick, owner = pickOwners, arg{"owners", owners}
	case cursorLease(req):
		pick = pickCursor
	case len(req.Channels) == 1:
		pick = pickOne
	}
	query := leaseStatement(pick, deadLetter)
	var out []LeasedMessage
	err := r.sendRetrying(ctx, func(batch *pgx.Batch) {
		if pick == pickCursor {
			batch.Queue(messagesLeasePosition.sql) // before anything gives the transaction an id
		}
		r.useGenericPlans(batch)
		if len(acks) > 0 {
			var unblocked int // plain receipts unblock nothing
			done = queueDelete(batch, messagesDelete, no, acks, &unblocked)
		}
		queueLeaseLock(batch, no, req.GroupNo, req.DLQ)
		// In the order of the single-channel statements' parameters, the common case (statement.bind).
		query.queue(batch, arg{"queue_no", no}, arg{"group_no", req.GroupNo}, arg{"dlq", req.DLQ},
			arg{"channels", req.Channels}, arg{"limit", req.Limit}, arg{"max_deliveries", req.MaxDeliveries},
			arg{"visibility_seconds", req.VisibilitySeconds}, arg{"lease_id", req.LeaseID}, owner).Query(func(rows pgx.Rows) error {
			var err error
			out, err = collectLeased(rows, req.LeaseID, int(req.Limit))
			return err
		})
		if !r.async && len(acks) == 0 {
			batch.Queue(leaseCommit, req.VisibilitySeconds) // after the lease: it counts the time the lease took
		}
	})
	return out, done, err
}

// LeaseAsConsumer registers (or renews) the consumer of a single-active-consumer queue, decides who is the
// group's active consumer and, when it is this one, leases up to req.Limit messages in publish order: one round
// trip, one transaction, under the group's consumer lock (so every node decides the same).
func (r *Messages) LeaseAsConsumer(ctx context.Context, req ConsumerLeaseRequest) (ConsumerDecision, []LeasedMessage, error) {
	var channels []string
	if !req.AllChannels {
		channels = req.Channels
		if channels == nil {
			channels = []string{}
		}
	}
	query := leaseStatement(pickConsumer, req.MaxDeliveries > 0 && !req.DLQ)
	var d ConsumerDecision
	no, err := r.nums.of(ctx, req.QueueID)
	if err != nil {
		return d, nil, err
	}
	var out []LeasedMessage
	err = r.sendRetrying(ctx, func(batch *pgx.Batch) {
		r.commitMode(batch)
		batch.Queue(consumersLock, req.QueueID, req.GroupNo)
		batch.Queue(consumersDecide, req.QueueID, req.GroupNo, req.Consumer, req.ConsumerLeaseSeconds).QueryRow(func(row pgx.Row) error {
			return d.scan(row)
		})
		queueLeaseLock(batch, no, req.GroupNo, req.DLQ)
		query.queue(batch, arg{"queue_no", no}, arg{"group_no", req.GroupNo}, arg{"dlq", req.DLQ}, arg{"channels", channels},
			arg{"queue_id", req.QueueID}, arg{"consumer", req.Consumer}, arg{"limit", req.Limit},
			arg{"max_deliveries", req.MaxDeliveries}, arg{"visibility_seconds", req.VisibilitySeconds},
			arg{"lease_id", req.LeaseID}).Query(func(rows pgx.Rows) error {
			var err error
			out, err = collectLeased(rows, req.LeaseID, int(req.Limit))
			return err
		})
	})
	return d, out, interpretError("leasing messages", err)
}

// collectLeased reads a lease statement's rows into LeasedMessages, sorted as sortLeased sorts them. The
// statement returns at most limit rows, so the slice is allocated once, at the first row (pgx.CollectRows grew it
// by doubling: a lease of 64 rows of some 200 bytes each allocated twice what it kept); a lease that finds
// nothing, as an idle long poll's do, allocates none.
func collectLeased(rows pgx.Rows, leaseID int64, limit int) ([]LeasedMessage, error) {
	defer rows.Close()
	var out []LeasedMessage
	for rows.Next() {
		if out == nil {
			out = make([]LeasedMessage, 0, limit)
		}
		m := LeasedMessage{LeaseID: leaseID}
		if err := rows.Scan(&m.GroupNo, &m.ID, &m.ChannelID, &m.VisibleAt, &m.ExpireAt, &m.DeliveryCount, &m.Content,
			&m.Attributes, &m.Metadata, &m.TimeCreated, &m.DeadLettered, &m.NegativeCode, &m.NegativeText, &m.MessageGroup,
			&m.Shared); err != nil {
			return nil, err
		}
		m.VisibleAt, m.ExpireAt, m.TimeCreated = m.VisibleAt.UTC(), m.ExpireAt.UTC(), m.TimeCreated.UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sortLeased(out)
	return out, nil
}

// cursorLease: req leases by its channel's cursor (lease.sql, .Cursor): a single channel, for no owner (a watch's
// leases are released by owner, per message), from the group (the DLQ holds no fresh message).
func cursorLease(req LeaseRequest) bool {
	return len(req.Channels) == 1 && req.Owner == "" && !req.DLQ
}

// queueLeaseLock queues, before a lease of the group's messages (not of its DLQ, which holds no fresh message),
// the group's lease lock and the end of its ranges past their deadline (sql/messages/ranges.sql).
func queueLeaseLock(batch *pgx.Batch, queueNo int64, groupNo int32, dlq bool) {
	if dlq {
		return
	}
	messagesLeaseLock.queue(batch, arg{"queue_no", queueNo}, arg{"group_no", groupNo})
	messagesReviveRanges.queue(batch, arg{"queue_no", queueNo}, arg{"group_no", groupNo})
}
