package persistence

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Messages is the repository of the data plane: messages, dedup keys and id watermarks. Its methods are in files
// by concern — messages_put.go, messages_lease.go, messages_ack.go, messages_ordering.go, messages_retention.go,
// messages_stats.go — and their SQL in sql/messages/ under the same names (statements.go).
type Messages struct {
	pool *pgxpool.Pool
	nums *queueNumbers
	// Concurrent puts (one consumer group per message), leases and acknowledgements of a queue run as one
	// statement or transaction (coalesce.go); nil when coalescing is off (NewMessages).
	puts   *coalescer[putKey, []NewMessage, []PutResult]
	leases *coalescer[leaseKey, LeaseRequest, leaseResult]
	// Leases that acknowledge (LeaseAcknowledging) coalesce apart, with the in-flight batches of both kinds:
	// each of their transactions does the work of a lease and of an acknowledgement.
	leasesAcking *coalescer[leaseKey, LeaseRequest, leaseResult]
	// Acknowledgements with receipts of ordered messages coalesce apart (ackKey): their batch takes the union of
	// its receipts' group locks (in lock_groups' global order) before it deletes.
	deletes *coalescer[ackKey, []Receipt, ackResult]
	async   bool // AsynchronousCommits
}

// NewMessages builds the repository. coalesce merges concurrent calls of a queue into shared statements
// (coalesce.go); without it every call is a statement of its own.
func NewMessages(pool *pgxpool.Pool, coalesce bool, opts ...MessagesOption) *Messages {
	r := &Messages{pool: pool, nums: newQueueNumbers(pool)}
	for _, o := range opts {
		o(r)
	}
	if coalesce {
		inFlight := coalescedDurableInFlight
		if r.async {
			inFlight = coalescedAsyncInFlight
		}
		r.puts = newCoalescer(coalescedDurableInFlight, maxCoalescedMessages, func(m []NewMessage) int { return len(m) }, r.insertBatches)
		r.leases = newCoalescer(coalescedLeaseInFlight, maxCoalescedLease, func(l LeaseRequest) int { return l.Limit }, r.leaseBatch)
		r.leasesAcking = newCoalescer(2*inFlight, maxCoalescedLease, func(l LeaseRequest) int { return l.Limit }, r.leaseBatch)
		r.deletes = newCoalescer(inFlight, maxCoalescedMessages, func(rc []Receipt) int { return len(rc) }, r.acknowledge)
	}
	return r
}

// Caps of a coalesced statement: messages put or acknowledged, and messages leased; and how many statements of
// one kind a queue runs at once before calls wait to be batched. A durable statement mostly waits for its WAL
// flush, so two run at once: at 1,000 single-message puts/s the put call's p50 fell from 2.9–3.1 to 1.8–2.0 ms
// (and put→receive's from 3.8–4.0 to 2.6–2.8 ms) at the same throughput with batches of 20; 4 at once was worse
// than 2. Asynchronous leases and acknowledgements (AsynchronousCommits) are CPU work: one at a time batches them
// most, and 2 measured less throughput. Leases commit asynchronously unless their visibility timeout is very
// short (leaseCommit), so they run one at a time per queue in every mode.
const (
	coalescedDurableInFlight = 2
	coalescedAsyncInFlight   = 1
	coalescedLeaseInFlight   = coalescedAsyncInFlight
	maxCoalescedMessages     = 200
	maxCoalescedLease        = 128
)

// NewMessage is one message of a PutMessages batch, validated and encoded.
type NewMessage struct {
	ChannelID    string
	DelaySeconds int32
	SizeBytes    int32
	Content      string
	Attributes   []byte // JSON object or nil
	Metadata     []byte // JSON object or nil
	DedupID      string
	// MessageGroup orders the message behind the earlier ones of its message group in every consumer group it
	// goes to ("" = unordered). The service leaves it empty for delayed messages: a delay takes a message out of
	// its group's order.
	MessageGroup string
	Groups       []int32 // the consumer groups that receive a copy (fanout); never empty
}

// PutResult is the stored id of a message.
type PutResult struct {
	ID        int64
	ExpireAt  time.Time
	Groups    int  // how many consumer groups received it
	Duplicate bool // an earlier message with the same deduplicationId was accepted within the window
}

// LeasedMessage is a message handed to a consumer (or moved to the DLQ by the lease).
type LeasedMessage struct {
	GroupNo       int32
	ID            int64
	LeaseID       int64 // the lease it is held by (its receipt's)
	ChannelID     string
	VisibleAt     time.Time
	ExpireAt      time.Time
	DeliveryCount int32
	Content       string
	Attributes    []byte
	Metadata      []byte
	TimeCreated   time.Time
	DeadLettered  bool // moved to the DLQ by this lease instead of being delivered
	NegativeCode  *string
	NegativeText  *string
	MessageGroup  *string // the ordering key; nil for an unordered message
	Shared        bool    // its content is stored once for several consumer groups (message_bodies)
}

// LeaseRequest selects what to lease.
type LeaseRequest struct {
	QueueID           string
	GroupNo           int32
	DLQ               bool
	Channels          []string // channels to take from, interleaved in this order
	Limit             int
	VisibilitySeconds int32
	LeaseID           int64
	MaxDeliveries     int32 // dead-letter after this many deliveries (0 = never; ignored on the DLQ)
	// Owner is the consumer the messages are leased to (a watch's consumer: its messages are released when it
	// leaves); "" = nobody in particular (GetMessages).
	Owner string
	// Acknowledge holds receipts to acknowledge in the lease's transaction, before it leases (LeaseAcknowledging):
	// plain receipts only (not of ordered messages).
	Acknowledge []Receipt
}

// ConsumerLeaseRequest is a lease on a single-active-consumer queue: Consumer registers (or renews) first, and
// messages are leased only when it is the group's active consumer, in publish order (by id) across channels.
type ConsumerLeaseRequest struct {
	LeaseRequest
	Consumer             string
	ConsumerLeaseSeconds int32
	AllChannels          bool // no channel filter: every channel, ignoring Channels
}

// Receipt addresses one lease of one message.
type Receipt struct {
	GroupNo int32
	ID      int64
	LeaseID int64
	DLQ     bool
	// Ordered: the message belongs to an ordered message group, so acknowledging it makes the group's next
	// message visible (under the group's lock).
	Ordered bool
	// Shared: the message's content is stored once for several consumer groups, so acknowledging its last
	// group's copy deletes the content too.
	Shared bool
}

// Stats counts a queue's (or its DLQ's) messages of one group. A message is visible, in flight (leased: it was
// delivered and its lease has not ended) or delayed (published with a delay that has not ended; never delivered).
type Stats struct {
	Visible   int64
	InFlight  int64
	Delayed   int64
	SizeBytes int64
	// OldestVisibleAge is how long the oldest visible message has been in the queue, in seconds (0 when none is
	// visible). Only StatsByGroup reads it.
	OldestVisibleAge float64
}

// MessagesOption configures NewMessages.
type MessagesOption func(*Messages)

// AsynchronousCommits lets leases and acknowledgements commit without waiting for their WAL to reach the disk
// (synchronous_commit off). It is for measuring what durability costs: a database crash can then undo
// acknowledged deletes (the message is delivered again) and leases (a delivery count goes down).
func AsynchronousCommits() MessagesOption { return func(r *Messages) { r.async = true } }

// A put's messages are stored and an acknowledged delete stays deleted before its caller is answered, even when
// the database crashes (tests/faults): their commits wait for their WAL. Leases and acknowledgements are
// coalesced per queue (group commit), so one WAL flush serves every call of a batch.
//
// A lease need not wait (DESIGN allows it, as long as a delivery count never goes down): a crash that undoes it
// makes its messages visible again with their delivery counts as before, and its receipts stale (409), which is
// at-least-once delivery. Its WAL reaches the disk with the next durable commit of any session, or within
// 3 × wal_writer_delay (the WAL writer's longest delay) — so a lease whose messages stay invisible for that and a
// second more after it commits is on disk before they can be leased again, and a crash undoes at most the last
// lease of a message: its next delivery repeats a count, never goes below one. leaseCommit decides per
// transaction, after the lease (so that a slow lease counts its own time), from the server's current
// wal_writer_delay; a lease that acknowledges (LeaseAcknowledging) always waits.
//
// asyncCommit, first in a batch (one implicit transaction), lets that transaction commit without waiting for its
// WAL: only under AsynchronousCommits.
const asyncCommit = `SELECT set_config('synchronous_commit', 'off', true)`

// genericPlans, early in a lease's or an acknowledgement's batch, makes the statements after it in the transaction
// run their cached generic plans; genericPlansAsync also lets the transaction commit without waiting for its WAL
// (AsynchronousCommits). Planned anew for each call, the lease spent up to a third of its execution planning, and
// a 48-receipt acknowledgement 0.31 ms a call, a third of its execution (pg_stat_statements with track_planning),
// for the plans that their generic ones are: the lease index for the pick and a TID scan for the lease's update,
// primary-key probes for the acknowledgement (TestPlans checks them). leaseCommit, after the lease in its
// transaction, lets it commit without waiting for its WAL when the leased messages stay invisible (until the
// transaction's start plus the visibility timeout, $1 seconds) for 3 × wal_writer_delay and a second after now;
// otherwise the transaction keeps the session's synchronous_commit (see above).
const (
	genericPlans      = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`
	genericPlansAsync = `SELECT set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)`
	leaseCommit       = `SELECT set_config('synchronous_commit', CASE WHEN now() + make_interval(secs => $1::int) >
		clock_timestamp() + 3 * current_setting('wal_writer_delay')::interval + interval '1 second' THEN 'off'
		ELSE current_setting('synchronous_commit') END, true)`
)

// useGenericPlans queues genericPlans, or genericPlansAsync under AsynchronousCommits.
func (r *Messages) useGenericPlans(batch *pgx.Batch) {
	if r.async {
		batch.Queue(genericPlansAsync)
	} else {
		batch.Queue(genericPlans)
	}
}

// commitMode queues the statement that makes the batch's transaction commit asynchronously, under
// AsynchronousCommits.
func (r *Messages) commitMode(batch *pgx.Batch) {
	if r.async {
		batch.Queue(asyncCommit)
	}
}

// sendRetrying sends the batch that build queues, and sends it again (at most twice more) when PostgreSQL aborted
// it to break a deadlock: a batch is one implicit transaction, rolled back whole, so sending it again is safe.
// A lease that dead-letters the head of an ordered group unblocks the group's next message, which a purge or
// retention batch may hold while it waits for the head. build runs per attempt, so its callbacks start afresh.
func (r *Messages) sendRetrying(ctx context.Context, build func(batch *pgx.Batch)) error {
	for attempt := 0; ; attempt++ {
		batch := &pgx.Batch{}
		build(batch)
		err := r.pool.SendBatch(ctx, batch).Close()
		if attempt < 2 && isDeadlock(err) {
			// Give the transaction that won the deadlock a moment to take the rows it waited for: sent again at
			// once, the batch could take them first and deadlock with it again (seen on a loaded machine).
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(5+rand.IntN(10)) * time.Millisecond << attempt):
			}
			continue
		}
		return err
	}
}

// Notify sends the notifications (wake-ups of other nodes) in one statement.
func (r *Messages) Notify(ctx context.Context, list []Notification) error {
	return interpretError("notifying", Notify(ctx, r.pool, list...))
}
