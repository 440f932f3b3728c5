package persistence

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Messages is the repository of the data plane: messages, dedup keys and id watermarks.
type Messages struct {
	pool *pgxpool.Pool
	nums *queueNumbers
	// Concurrent plain puts, leases and acknowledgements of a queue run as one statement (coalesce.go); nil
	// when coalescing is off (NewMessages).
	puts    *coalescer[putKey, []NewMessage, []PutResult]
	leases  *coalescer[leaseKey, LeaseRequest, []LeasedMessage]
	deletes *coalescer[int64, []Receipt, []bool]
}

// NewMessages builds the repository. coalesce merges concurrent calls of a queue into shared statements
// (coalesce.go); without it every call is a statement of its own.
func NewMessages(pool *pgxpool.Pool, coalesce bool) *Messages {
	r := &Messages{pool: pool, nums: newQueueNumbers(pool)}
	if coalesce {
		r.puts = newCoalescer(coalescedPutsInFlight, maxCoalescedMessages, func(m []NewMessage) int { return len(m) }, r.insertPlain)
		r.leases = newCoalescer(coalescedInFlight, maxCoalescedLease, func(l LeaseRequest) int { return l.Limit }, r.leaseBatch)
		r.deletes = newCoalescer(coalescedInFlight, maxCoalescedMessages, func(rc []Receipt) int { return len(rc) }, r.acknowledge)
	}
	return r
}

// Caps of a coalesced statement: messages put or acknowledged, and messages leased; and how many statements of
// one kind a queue runs at once before calls wait to be batched. Leases and acknowledgements are CPU work (they
// commit without waiting for their WAL): 1 batches them most, and 2 measured less throughput. A put's statement
// mostly waits for its WAL flush, so puts run 2 at once: at 1,000 single-message puts/s the put call's p50 fell
// from 2.9–3.1 to 1.8–2.0 ms (and put→receive's from 3.8–4.0 to 2.6–2.8 ms) at the same throughput with
// batches of 20; 4 at once was worse than 2.
const (
	coalescedInFlight     = 1
	coalescedPutsInFlight = 2
	maxCoalescedMessages  = 200
	maxCoalescedLease     = 128
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
}

// Stats counts a queue's (or its DLQ's) messages of one group. A message is visible, in flight (leased: it was
// delivered and its lease has not ended) or delayed (published with a delay that has not ended; never delivered).
type Stats struct {
	Visible   int64
	InFlight  int64
	Delayed   int64
	SizeBytes int64
}

// Statements that address rows by (queue_no, id, group_no) — the primary key — compare group_no and dlq with
// IS NOT DISTINCT FROM: it is not an index operator, so the planner cannot mistake the lease index
// (queue_no, group_no, dlq, …) for a way to find single rows by id, which scans the whole queue per row (it did:
// 1–3 ms per acknowledged message under load).
const (
	// Insert a batch: ids come from the sequence in input order (volatile functions are evaluated after the
	// ordinality order), so sorting the returned ids restores the batch order.
	messagesInsert = `-- messages.insert
		WITH input AS (
			SELECT nextval('messages_id_seq') AS id, u.*
			FROM unnest($2::text[], $3::int[], $4::int[], $5::text[], $6::json[], $7::json[])
				WITH ORDINALITY AS u(channel_id, delay, size_bytes, content, attributes, metadata, ord)
			ORDER BY u.ord
		), ins AS (
			INSERT INTO messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content, attributes, metadata)
			SELECT $1, g.group_no, input.id, input.channel_id, now() + make_interval(secs => input.delay),
				now() + make_interval(secs => $8), input.size_bytes, input.content, input.attributes, input.metadata
			FROM input JOIN unnest($9::int[], $10::int[]) AS g(ord, group_no) ON g.ord = input.ord)
		SELECT id, ord, now() + make_interval(secs => $8) FROM input`

	// The same for a batch whose every message goes to exactly one consumer group ($9, per message): no CTE and
	// no join (a 20-message insert ran 1.5–2× the rate of messagesInsert's, pgbench). unnest yields the rows in
	// batch order and nextval is evaluated row by row, so the returned ids sorted are in batch order.
	messagesInsertOneCopy = `-- messages.insert_one_copy
		INSERT INTO messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content, attributes, metadata)
		SELECT $1, u.group_no, nextval('messages_id_seq'), u.channel_id, now() + make_interval(secs => u.delay),
			now() + make_interval(secs => $8), u.size_bytes, u.content, u.attributes, u.metadata
		FROM unnest($2::text[], $3::int[], $4::int[], $5::text[], $6::json[], $7::json[], $9::int[])
			AS u(channel_id, delay, size_bytes, content, attributes, metadata, group_no)
		RETURNING id, expire_at`

	// Lease: the oldest visible rows of each requested channel (interleaved round-robin across channels), locked
	// with SKIP LOCKED and updated in the same statement. A row whose delivery count reached the limit moves to
	// the DLQ instead of being delivered; when it was the head of an ordered message group, the group's next
	// message becomes visible in the same statement (messagesLeaseDeadLetter: only where a DLQ limit is set, so
	// that a queue without one runs the plain update).
	messagesLease           = `-- messages.lease` + messagesLeasePick + messagesLeaseSet
	messagesLeaseDeadLetter = `-- messages.lease_dead_letter` + messagesLeasePick + messagesLeaseSetUnblock
	// The same from a single channel (the common case: a queue with one channel, or an exact channelFilter):
	// one index range, no interleaving.
	messagesLeaseOne           = `-- messages.lease_one` + messagesLeasePickOne + messagesLeaseSet
	messagesLeaseOneDeadLetter = `-- messages.lease_one_dead_letter` + messagesLeasePickOne + messagesLeaseSetUnblock

	messagesLeasePick = `
		WITH candidates AS (
			SELECT m.group_no, m.id, row_number() OVER (PARTITION BY c.ord ORDER BY m.visible_at, m.id) AS rank, c.ord
			FROM unnest($3::text[]) WITH ORDINALITY AS c(channel_id, ord)
			CROSS JOIN LATERAL (
				SELECT group_no, id, visible_at FROM messages
				WHERE queue_no = $1 AND group_no = $2 AND dlq = $4 AND channel_id = c.channel_id
					AND visible_at <= now() AND expire_at > now()
				ORDER BY visible_at, id
				LIMIT $5
				FOR UPDATE SKIP LOCKED) m
		), next AS (
			SELECT group_no, id FROM candidates ORDER BY rank, ord LIMIT $5
		)`

	messagesLeasePickOne = `
		WITH next AS (` + messagesLeasePickOneRows + `)`
	messagesLeasePickOneRows = `
			SELECT group_no, id FROM messages
			WHERE queue_no = $1 AND group_no = $2 AND dlq = $4 AND channel_id = ($3::text[])[1]
				AND visible_at <= now() AND expire_at > now()
			ORDER BY visible_at, id
			LIMIT $5
			FOR UPDATE SKIP LOCKED
		`

	// The single-channel lease for the coalesced leases of several owners (watches): $9 holds an owner per slot
	// (the first request's limit times its owner, then the next request's, …), and the k-th picked row by id goes
	// to slot k — the row that leaseBatch deals to that request.
	messagesLeaseOneOwners           = `-- messages.lease_one_owners` + messagesLeasePickOneRanked + messagesLeaseSetOwners
	messagesLeaseOneOwnersDeadLetter = `-- messages.lease_one_owners_dead_letter` + messagesLeasePickOneRanked + messagesLeaseSetOwnersUnblock

	messagesLeasePickOneRanked = `
		WITH picked AS (` + messagesLeasePickOneRows + `), next AS (
			SELECT group_no, id, row_number() OVER (ORDER BY id) AS slot FROM picked
		)`

	// Lease on a single-active-consumer queue, after consumers.decide in the same transaction: only the active
	// consumer (decided by that statement, so its row was written now) leases, and it leases in publish order
	// across the channels ($3 NULL = every channel).
	messagesLeaseAsConsumer           = `-- messages.lease_as_consumer` + messagesLeaseAsConsumerPick + messagesLeaseSet
	messagesLeaseAsConsumerDeadLetter = `-- messages.lease_as_consumer_dead_letter` + messagesLeaseAsConsumerPick + messagesLeaseSetUnblock

	messagesLeaseAsConsumerPick = `
		WITH next AS (
			SELECT group_no, id FROM messages
			WHERE queue_no = $1 AND group_no = $2 AND dlq = $4 AND ($3::text[] IS NULL OR channel_id = ANY ($3))
				AND visible_at <= now() AND expire_at > now()
				AND EXISTS (SELECT 1 FROM consumers c WHERE c.queue_id = $10 AND c.group_no = $2 AND c.consumer_id = $9
					AND c.active_since IS NOT NULL AND c.last_seen = now())
			ORDER BY id
			LIMIT $5
			FOR UPDATE OF messages SKIP LOCKED
		)`

	// The next message of each ordered group in the CTE heads_left (group_no, message_group; NULL groups are
	// ignored) that lost its head: the oldest waiting one becomes visible. Waiting rows sort last in the lease
	// index and first-to-last by id in messages_group, so this is one index probe per group (next_up, kept apart
	// so that the update looks its rows up by primary key: m.id = ANY is the index condition). The scalar
	// subquery picks by the statement's snapshot and the update re-checks visible_at: when the picked row was
	// unblocked or deleted meanwhile, nothing else is unblocked in its place. Defines the CTEs next_up and
	// unblocked (group_no, id).
	messagesUnblockNext = `next_up AS MATERIALIZED (
			SELECT h.group_no, (SELECT n.id FROM messages n
					WHERE n.queue_no = $1 AND n.group_no = h.group_no AND n.message_group = h.message_group AND NOT n.dlq
						AND n.visible_at = 'infinity'
					ORDER BY n.id LIMIT 1) AS id
			FROM (SELECT DISTINCT group_no, message_group FROM heads_left WHERE message_group IS NOT NULL) h
		), unblocked AS (
			UPDATE messages m SET visible_at = now()
			FROM next_up nx
			WHERE m.queue_no = $1 AND m.id = ANY (ARRAY (SELECT id FROM next_up)) AND m.id = nx.id
				AND m.group_no IS NOT DISTINCT FROM nx.group_no AND m.visible_at = 'infinity'
			RETURNING m.group_no, m.id
		)`

	// The update shared by the leases: deliver (or dead-letter) the picked rows, looked up by primary key
	// (m.id = ANY is the index condition: joined on next alone, a generic plan hashes the whole queue).
	messagesLeaseSet = messagesLeaseSetHead + `
				lease_owner = $9` + messagesLeaseSetTail
	messagesLeaseSetHead = `
			UPDATE messages m SET
				dlq = m.dlq OR ($8 > 0 AND m.delivery_count >= $8),
				visible_at = CASE WHEN NOT m.dlq AND $8 > 0 AND m.delivery_count >= $8 THEN now()
					ELSE now() + make_interval(secs => $6) END,
				delivery_count = CASE WHEN NOT m.dlq AND $8 > 0 AND m.delivery_count >= $8 THEN m.delivery_count
					ELSE m.delivery_count + 1 END,
				lease_id = $7,`
	messagesLeaseSetOwnersHead = messagesLeaseSetHead + `
				lease_owner = ($9::text[])[next.slot]`
	messagesLeaseSetTail = `
			FROM next
			WHERE m.queue_no = $1 AND m.id = ANY (ARRAY (SELECT id FROM next)) AND m.id = next.id
				AND m.group_no IS NOT DISTINCT FROM next.group_no
			RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.content,
				m.attributes, m.metadata, m.time_created, m.dlq <> $4 AS dead_lettered, m.last_negative_code,
				m.last_negative_reason, m.message_group`

	// The same, then unblock the ordered groups whose head was dead-lettered.
	messagesLeaseSetUnblock       = `, leased AS (` + messagesLeaseSet + messagesLeaseUnblockDeadHeads
	messagesLeaseUnblockDeadHeads = `
		), heads_left AS (
			SELECT group_no, message_group FROM leased WHERE dead_lettered
		), ` + messagesUnblockNext + `
		SELECT * FROM leased`

	// The same two with an owner per slot ($9, text[]).
	messagesLeaseSetOwners        = messagesLeaseSetOwnersHead + messagesLeaseSetTail
	messagesLeaseSetOwnersUnblock = `, leased AS (` + messagesLeaseSetOwners + messagesLeaseUnblockDeadHeads

	// Acknowledge: delete the rows whose lease the receipts still hold. Rows come back as (group_no, id, false)
	// per deleted message.
	messagesDelete = `-- messages.delete
		DELETE FROM messages m USING unnest($2::int[], $3::bigint[], $4::bigint[], $5::bool[]) AS r(group_no, id, lease_id, dlq)
		WHERE m.queue_no = $1 AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no AND m.lease_id = r.lease_id AND m.dlq IS NOT DISTINCT FROM r.dlq
		RETURNING m.group_no, m.id, false`

	// Acknowledge receipts of which some are of ordered messages: a deleted head of an ordered message group
	// makes the group's next message visible in the same statement, which returns (group_no, id, true) for it.
	messagesDeleteOrdered = `-- messages.delete_ordered
		WITH deleted AS (
			DELETE FROM messages m USING unnest($2::int[], $3::bigint[], $4::bigint[], $5::bool[]) AS r(group_no, id, lease_id, dlq)
			WHERE m.queue_no = $1 AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no AND m.lease_id = r.lease_id AND m.dlq IS NOT DISTINCT FROM r.dlq
			RETURNING m.group_no, m.id, m.message_group, m.dlq
		), heads_left AS (
			SELECT group_no, message_group FROM deleted WHERE NOT dlq
		), ` + messagesUnblockNext + `
		SELECT group_no, id, false FROM deleted UNION ALL SELECT group_no, id, true FROM unblocked`

	// Before a statement that changes the head of ordered message groups: the groups' advisory locks, in one
	// global order (no deadlocks between batches). Puts, acknowledgements, redrives and repairs of the same group
	// are serialised by them, and each decides with a snapshot taken after the lock (a later statement of the same
	// transaction or batch), so a put always sees the head that an acknowledgement just removed, and an
	// acknowledgement always sees the message that a put just queued behind the head. $2/$3 are the (consumer
	// group, message group) pairs.
	messagesLockGroups = `-- messages.lock_groups
		SELECT pg_advisory_xact_lock(k) FROM (
			SELECT DISTINCT hashtextextended($1 || '/' || u.group_no || '/' || u.message_group, 0) AS k
			FROM unnest($2::int[], $3::text[]) AS u(group_no, message_group) ORDER BY 1) keys`

	// The same locks, for the ordered messages that receipts address: one primary-key probe per receipt (a
	// scalar subquery, so that the planner cannot turn it into a scan of the queue's ordered messages).
	messagesLockReceiptGroups = `-- messages.lock_receipt_groups
		SELECT pg_advisory_xact_lock(k) FROM (
			SELECT DISTINCT k FROM (
				SELECT (SELECT hashtextextended($4 || '/' || m.group_no || '/' || m.message_group, 0) FROM messages m
					WHERE m.queue_no = $1 AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no
						AND m.message_group IS NOT NULL AND NOT m.dlq) AS k
				FROM unnest($2::int[], $3::bigint[]) AS r(group_no, id)) receipt_keys
			WHERE k IS NOT NULL ORDER BY 1) keys`

	// Insert a batch that holds ordered messages (after messages.lock_groups in the same transaction). Per
	// consumer group, the first message of a message group that has no message yet is its head and is inserted
	// as usual; every other one waits (visible_at = 'infinity'). The group's last message is locked FOR KEY SHARE
	// until commit, so no lease can dead-letter it — and unblock nothing, not seeing this insert — meanwhile: the
	// lease skips it (SKIP LOCKED), or this statement waits for the lease and then finds it in the DLQ.
	messagesInsertOrdered = `-- messages.insert_ordered
		WITH input AS (
			SELECT nextval('messages_id_seq') AS id, u.*
			FROM unnest($2::text[], $3::int[], $4::int[], $5::text[], $6::json[], $7::json[], $11::text[])
				WITH ORDINALITY AS u(channel_id, delay, size_bytes, content, attributes, metadata, message_group, ord)
			ORDER BY u.ord
		), copies AS (
			SELECT input.*, g.group_no,
				row_number() OVER (PARTITION BY g.group_no, input.message_group ORDER BY input.id) AS position
			FROM input JOIN unnest($9::int[], $10::int[]) AS g(ord, group_no) ON g.ord = input.ord
		), queued AS (
			SELECT k.group_no, k.message_group FROM (
				SELECT DISTINCT group_no, message_group FROM copies WHERE message_group IS NOT NULL) k
			CROSS JOIN LATERAL (
				SELECT 1 FROM messages m
				WHERE m.queue_no = $1 AND m.group_no = k.group_no AND m.message_group = k.message_group AND NOT m.dlq
				ORDER BY m.id DESC LIMIT 1
				FOR KEY SHARE) last
		), ins AS (
			INSERT INTO messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content,
				attributes, metadata, message_group)
			SELECT $1, c.group_no, c.id, c.channel_id,
				CASE WHEN c.message_group IS NOT NULL AND (c.position > 1 OR q.group_no IS NOT NULL) THEN 'infinity'::timestamptz
					ELSE now() + make_interval(secs => c.delay) END,
				now() + make_interval(secs => $8), c.size_bytes, c.content, c.attributes, c.metadata, c.message_group
			FROM copies c LEFT JOIN queued q ON q.group_no = c.group_no AND q.message_group = c.message_group)
		SELECT id, ord, now() + make_interval(secs => $8) FROM input`

	// After rows were deleted in bulk (purge, retention) — in the same transaction, under messages.lock_groups —
	// make the next message of each given group visible when the group has no head left.
	messagesUnblockGroups = `-- messages.unblock_groups
		WITH heads_left AS (
			SELECT k.group_no, k.message_group FROM unnest($2::int[], $3::text[]) AS k(group_no, message_group)
			WHERE NOT EXISTS (SELECT 1 FROM messages a WHERE a.queue_no = $1 AND a.group_no = k.group_no
				AND a.message_group = k.message_group AND NOT a.dlq AND a.visible_at <> 'infinity')
		), ` + messagesUnblockNext + `
		SELECT count(*) FROM unblocked`

	messagesUpdateVisibility = `-- messages.update_visibility
		UPDATE messages m SET visible_at = now() + make_interval(secs => r.secs)
		FROM unnest($2::int[], $3::bigint[], $4::bigint[], $5::bool[], $6::int[]) AS r(group_no, id, lease_id, dlq, secs)
		WHERE m.queue_no = $1 AND m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no AND m.lease_id = r.lease_id AND m.dlq IS NOT DISTINCT FROM r.dlq
		RETURNING m.group_no, m.id, m.visible_at`

	// Which of these messages still exist (to tell a stale receipt from a message already acknowledged).
	messagesExisting = `SELECT m.group_no, m.id FROM messages m
		JOIN unnest($2::int[], $3::bigint[]) AS r(group_no, id) ON m.id = r.id AND m.group_no IS NOT DISTINCT FROM r.group_no
		WHERE m.queue_no = $1`

	// Messages of an ordered group that wait for an earlier one (visible_at 'infinity') count as visible: they
	// are in the queue, neither leased nor delayed.
	messagesStats = `-- messages.stats
		SELECT dlq, count(*) FILTER (WHERE visible_at <= now() OR visible_at = 'infinity'),
			count(*) FILTER (WHERE visible_at > now() AND visible_at < 'infinity' AND delivery_count > 0),
			count(*) FILTER (WHERE visible_at > now() AND visible_at < 'infinity' AND delivery_count = 0),
			coalesce(sum(size_bytes), 0)
		FROM messages WHERE queue_no = $1 AND group_no = $2 AND ($3 = '' OR channel_id = $3) AND expire_at > now()
		GROUP BY dlq`

	// Distinct channels by a skip scan over the lease index: one index probe per channel.
	messagesChannels = `-- messages.channels
		WITH RECURSIVE ch AS (
			(SELECT channel_id FROM messages WHERE queue_no = $1 AND group_no = $2 AND dlq = $3 AND channel_id >= $4
				AND (channel_id <> $4 OR $6) ORDER BY channel_id LIMIT 1)
			UNION ALL
			SELECT (SELECT m.channel_id FROM messages m WHERE m.queue_no = $1 AND m.group_no = $2 AND m.dlq = $3
				AND m.channel_id > ch.channel_id ORDER BY m.channel_id LIMIT 1)
			FROM ch WHERE ch.channel_id IS NOT NULL)
		SELECT channel_id FROM ch WHERE channel_id IS NOT NULL LIMIT $5`

	// Redrive, step 1: pick (and lock) the oldest DLQ messages.
	messagesRedrivePick = `-- messages.redrive_pick
		SELECT id, message_group FROM messages WHERE queue_no = $1 AND group_no = $2 AND dlq
		ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED`

	// Redrive, step 2 (after messages.lock_groups for their ordered groups): back to the queue, visible at once —
	// except a message of an ordered group that still has messages in the queue (or an earlier redriven one): it
	// waits, and being older than the waiting ones it is next after the group's current head. The group's last
	// message is locked FOR KEY SHARE as in messages.insert_ordered.
	messagesRedrive = `-- messages.redrive
		WITH picked AS (
			SELECT p.id, p.message_group, row_number() OVER (PARTITION BY p.message_group ORDER BY p.id) AS position
			FROM unnest($3::bigint[], $4::text[]) AS p(id, message_group)
		), queued AS (
			SELECT k.message_group FROM (SELECT DISTINCT message_group FROM picked WHERE message_group IS NOT NULL) k
			CROSS JOIN LATERAL (
				SELECT 1 FROM messages m
				WHERE m.queue_no = $1 AND m.group_no = $2 AND m.message_group = k.message_group AND NOT m.dlq
				ORDER BY m.id DESC LIMIT 1
				FOR KEY SHARE) last
		)
		UPDATE messages m SET dlq = false, delivery_count = 0, lease_id = 0,
			visible_at = CASE WHEN p.message_group IS NOT NULL AND (p.position > 1 OR q.message_group IS NOT NULL)
				THEN 'infinity'::timestamptz ELSE now() END
		FROM picked p LEFT JOIN queued q ON q.message_group = p.message_group
		WHERE m.queue_no = $1 AND m.id = ANY ($3) AND m.id = p.id AND m.group_no IS NOT DISTINCT FROM $2 AND m.dlq`

	// Batched deletes address rows by primary key, not by ctid: a lease or an acknowledgement that rewrites a row
	// between the pick and the delete moves its ctid, and a ctid-addressed delete would silently skip it.

	// Purge one batch of the messages published before the purge started (id <= $4): dlq NULL = both. Bulk
	// deletes run in steps in one transaction (deleteBatch): pick a batch (with the ordered groups it touches),
	// take those groups' locks, delete the picked rows that still qualify, unblock the groups.
	messagesPurgePick = `-- messages.purge_pick
		SELECT group_no, id, message_group FROM messages
		WHERE queue_no = $1 AND ($2::bool IS NULL OR dlq = $2) AND id <= $4 LIMIT $3`

	// The highest message id allocated so far.
	messagesLastID = `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM messages_id_seq`

	// Retention: one batch of a queue's messages with ids at or below the cutoff (a primary-key range per group).
	messagesExpirePick = `-- messages.expire_pick
		SELECT group_no, id, message_group FROM messages WHERE queue_no = $1
			AND group_no = ANY (ARRAY (SELECT 0 UNION SELECT group_no FROM consumer_groups WHERE queue_id = $4))
			AND id <= $2 LIMIT $3`

	// The delete step of deleteBatch: the picked rows, by primary key, still in the DLQ or not as the purge asks
	// ($4 NULL = either).
	messagesDeletePicked = `-- messages.delete_picked
		DELETE FROM messages m USING unnest($2::int[], $3::bigint[]) AS p(group_no, id)
		WHERE m.queue_no = $1 AND m.id = ANY ($3) AND m.id = p.id AND m.group_no IS NOT DISTINCT FROM p.group_no
			AND ($4::bool IS NULL OR m.dlq IS NOT DISTINCT FROM $4)`

	// Messages of queues deleted in the last day: nodes cache a queue's state for a moment, so a put that raced
	// the delete can land after the delete's purge.
	messagesDeleteOrphans = `-- messages.delete_orphans
		DELETE FROM messages m USING (
			SELECT o.queue_no, o.group_no, o.id FROM queues q
			CROSS JOIN LATERAL (SELECT queue_no, group_no, id FROM messages WHERE queue_no = q.no LIMIT $1) o
			WHERE q.lifecycle_state = 'DELETED' AND q.time_updated > now() - interval '1 day' LIMIT $1) d
		WHERE m.queue_no = d.queue_no AND m.id = d.id AND m.group_no IS NOT DISTINCT FROM d.group_no`

	messagesSizeByChannel = `-- messages.size_by_channel
		SELECT channel_id, coalesce(sum(size_bytes), 0), max(id) FROM messages WHERE queue_no = $1 GROUP BY channel_id`

	watermarkRecord = `INSERT INTO message_id_watermarks (time_recorded, max_id)
		SELECT now(), CASE WHEN is_called THEN last_value ELSE 0 END FROM messages_id_seq
		ON CONFLICT DO NOTHING`
	watermarkCutoff = `SELECT coalesce((SELECT max_id FROM message_id_watermarks WHERE time_recorded <= now() - make_interval(secs => $1)
		ORDER BY time_recorded DESC LIMIT 1), 0)`
	watermarkPrune = `DELETE FROM message_id_watermarks WHERE time_recorded < now() - interval '8 days'`

	dedupClaim = `-- dedup.claim
		INSERT INTO message_dedup_keys (queue_id, dedup_id, message_id, expire_at)
		SELECT $1, d, 0, now() + make_interval(secs => $3) FROM unnest($2::text[]) AS d
		ON CONFLICT (queue_id, dedup_id) DO UPDATE SET message_id = 0, expire_at = excluded.expire_at
			WHERE message_dedup_keys.expire_at <= now()
		RETURNING dedup_id`
	// The original message's expiry: its own while it is stored, else derived from the key, which was written in
	// the same transaction (same now()) with the window instead of the retention.
	dedupLookup = `SELECT k.dedup_id, k.message_id, coalesce(
			(SELECT m.expire_at FROM messages m WHERE m.queue_no = $6 AND m.group_no = ANY ($3::int[]) AND m.id = k.message_id LIMIT 1),
			k.expire_at - make_interval(secs => $4) + make_interval(secs => $5))
		FROM message_dedup_keys k WHERE k.queue_id = $1 AND k.dedup_id = ANY ($2::text[])`
	dedupSet = `UPDATE message_dedup_keys k SET message_id = r.id FROM unnest($2::text[], $3::bigint[]) AS r(dedup_id, id)
		WHERE k.queue_id = $1 AND k.dedup_id = r.dedup_id`
	dedupExpire = `DELETE FROM message_dedup_keys WHERE ctid = ANY (ARRAY (
		SELECT ctid FROM message_dedup_keys WHERE expire_at < now() LIMIT $1))`
)

// Put stores a batch in one transaction (one statement without deduplication), copying each message into the
// consumer groups it names (fanout costs rows, not round trips). groups lists all of the queue's groups (to find
// the original of a duplicate). Results are in batch order.
func (r *Messages) Put(ctx context.Context, queueID string, retentionSeconds, dedupWindowSeconds int32, groups []int32,
	msgs []NewMessage) ([]PutResult, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	results := make([]PutResult, len(msgs))
	// Each id once: one INSERT … ON CONFLICT DO UPDATE cannot touch the same key twice.
	var dedupIDs []string
	if dedupWindowSeconds > 0 {
		seen := map[string]bool{}
		for _, m := range msgs {
			if m.DedupID != "" && !seen[m.DedupID] {
				seen[m.DedupID] = true
				dedupIDs = append(dedupIDs, m.DedupID)
			}
		}
	}
	if len(dedupIDs) == 0 {
		if r.puts != nil && isPlain(msgs) {
			results, err := r.puts.do(ctx, putKey{no, retentionSeconds}, msgs)
			return results, interpretError("putting messages", err)
		}
		batch := &pgx.Batch{}
		release := r.queueInsert(batch, queueID, no, retentionSeconds, msgs, results, nil)
		err := r.pool.SendBatch(ctx, batch).Close() // one statement: atomic on its own
		release()
		return results, interpretError("putting messages", err)
	}
	err = InTx(ctx, r.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, dedupClaim, queueID, dedupIDs, dedupWindowSeconds)
		if err != nil {
			return err
		}
		claimedList, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		claimed := make(map[string]bool, len(claimedList))
		for _, d := range claimedList {
			claimed[d] = true
		}
		existing := map[string]PutResult{}
		if len(claimed) < len(dedupIDs) {
			rows, err := tx.Query(ctx, dedupLookup, queueID, dedupIDs, groups, dedupWindowSeconds, retentionSeconds, no)
			if err != nil {
				return err
			}
			var d string
			var id int64
			var expire time.Time
			if _, err := pgx.ForEachRow(rows, []any{&d, &id, &expire}, func() error {
				if !claimed[d] {
					existing[d] = PutResult{ID: id, ExpireAt: expire.UTC(), Duplicate: true}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		// Decide per message: a duplicate of an earlier accepted message, of one earlier in this batch, or new.
		var fresh []NewMessage
		var freshIdx []int
		firstInBatch := map[string]int{}
		for i, m := range msgs {
			if m.DedupID != "" {
				if original, dup := existing[m.DedupID]; dup {
					results[i] = original
					continue
				}
				if j, dup := firstInBatch[m.DedupID]; dup {
					results[i] = PutResult{Duplicate: true, ID: -int64(j) - 1} // resolved below
					continue
				}
				firstInBatch[m.DedupID] = i
			}
			fresh = append(fresh, m)
			freshIdx = append(freshIdx, i)
		}
		if len(fresh) > 0 {
			batch := &pgx.Batch{}
			release := r.queueInsert(batch, queueID, no, retentionSeconds, fresh, results, freshIdx)
			err := tx.SendBatch(ctx, batch).Close()
			release()
			if err != nil {
				return err
			}
		}
		var setIDs []string
		var setMsg []int64
		for d, i := range firstInBatch {
			if claimed[d] {
				setIDs, setMsg = append(setIDs, d), append(setMsg, results[i].ID)
			}
		}
		if len(setIDs) > 0 {
			if _, err := tx.Exec(ctx, dedupSet, queueID, setIDs, setMsg); err != nil {
				return err
			}
		}
		for i := range results {
			if results[i].Duplicate && results[i].ID < 0 {
				first := results[-results[i].ID-1]
				results[i].ID, results[i].ExpireAt = first.ID, first.ExpireAt
			}
		}
		return nil
	})
	return results, interpretError("putting messages", err)
}

// putKey groups the puts that can share a statement: same queue, same retention.
type putKey struct {
	queueNo          int64
	retentionSeconds int32
}

// isPlain: every message goes to one consumer group and none is ordered (the statement messagesInsertOneCopy).
func isPlain(msgs []NewMessage) bool {
	return !slices.ContainsFunc(msgs, func(m NewMessage) bool { return m.MessageGroup != "" || len(m.Groups) != 1 })
}

// insertPlain stores the plain batches of concurrent puts (coalescer) in one statement — one transaction, one
// WAL flush — and returns each batch's results.
func (r *Messages) insertPlain(ctx context.Context, key putKey, items [][]NewMessage) ([][]PutResult, error) {
	all := items[0]
	if len(items) > 1 {
		all = slices.Concat(items...)
	}
	results := make([]PutResult, len(all))
	batch := &pgx.Batch{}
	release := r.queueInsert(batch, "", key.queueNo, key.retentionSeconds, all, results, nil)
	err := r.pool.SendBatch(ctx, batch).Close()
	release()
	if err != nil {
		return nil, err
	}
	out := make([][]PutResult, len(items))
	for i, msgs := range items {
		out[i], results = results[:len(msgs):len(msgs)], results[len(msgs):]
	}
	return out, nil
}

// queueInsert adds the insert statement to batch; its result callback fills results (at idx[k] for the k-th
// message when idx is set). A batch with ordered messages locks their groups first (same batch or transaction:
// the lock is held until the insert commits). A batch without any pays for none of it. The contents go as one
// pre-encoded text[] (textArray); call release once the batch has been sent.
func (r *Messages) queueInsert(batch *pgx.Batch, queueID string, queueNo int64, retentionSeconds int32, msgs []NewMessage,
	results []PutResult, idx []int) (release func()) {
	n := len(msgs)
	store := func(k int, res PutResult) { // the k-th message's result
		if idx != nil {
			k = idx[k]
		}
		results[k] = res
	}
	channels, delays, sizes := make([]string, n), make([]int32, n), make([]int32, n)
	contents, attrs, metas := make([]string, n), make([]*string, n), make([]*string, n)
	messageGroups := make([]*string, n)
	var pairOrd, pairGroup, lockGroupNos []int32
	var lockNames []string
	for i, m := range msgs {
		channels[i], delays[i], sizes[i], contents[i] = m.ChannelID, m.DelaySeconds, m.SizeBytes, m.Content
		attrs[i], metas[i] = jsonText(m.Attributes), jsonText(m.Metadata)
		if m.MessageGroup != "" {
			messageGroups[i] = &msgs[i].MessageGroup
		}
		for _, g := range m.Groups {
			pairOrd, pairGroup = append(pairOrd, int32(i+1)), append(pairGroup, g)
			if m.MessageGroup != "" {
				lockGroupNos, lockNames = append(lockGroupNos, g), append(lockNames, m.MessageGroup)
			}
		}
	}
	contentArray := newTextArray(contents)
	release = func() { releaseTextArray(contentArray) }
	if len(lockNames) == 0 && len(pairGroup) == n {
		// One copy per message (no fanout): the plain insert.
		batch.Queue(messagesInsertOneCopy, queueNo, channels, delays, sizes, contentArray, attrs, metas, retentionSeconds,
			pairGroup).Query(func(rows pgx.Rows) error {
			stored := make([]PutResult, 0, n)
			var res PutResult
			if _, err := pgx.ForEachRow(rows, []any{&res.ID, &res.ExpireAt}, func() error {
				stored = append(stored, res)
				return nil
			}); err != nil {
				return err
			}
			if len(stored) != n {
				return fmt.Errorf("insert stored %d messages of a batch of %d", len(stored), n)
			}
			// Ids come from the sequence in batch order: the k-th smallest is the k-th message's.
			slices.SortFunc(stored, func(a, b PutResult) int { return cmp.Compare(a.ID, b.ID) })
			for k, res := range stored {
				res.ExpireAt, res.Groups = res.ExpireAt.UTC(), 1
				store(k, res)
			}
			return nil
		})
		return release
	}
	query := messagesInsert
	args := []any{queueNo, channels, delays, sizes, contentArray, attrs, metas, retentionSeconds, pairOrd, pairGroup}
	if len(lockNames) > 0 {
		batch.Queue(messagesLockGroups, queueID, lockGroupNos, lockNames)
		query, args = messagesInsertOrdered, append(args, messageGroups)
	}
	batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		var id, ord int64
		var expire time.Time
		_, err := pgx.ForEachRow(rows, []any{&id, &ord, &expire}, func() error {
			k := int(ord - 1)
			if k < 0 || k >= n {
				return fmt.Errorf("insert returned ordinality %d for a batch of %d", ord, n)
			}
			store(k, PutResult{ID: id, ExpireAt: expire.UTC(), Groups: len(msgs[k].Groups)})
			return nil
		})
		return err
	})
	return release
}

// asyncCommit, first in a batch (one implicit transaction), lets that transaction commit without waiting for
// its WAL to reach the disk. Leases and acknowledgements use it: a lease or an acknowledgement lost in a crash
// leaves its message visible again, a redelivery that at-least-once delivery allows, and neither commit waits
// for an fsync (one less on the way from a put to its receiver, and fewer for the puts to queue behind). Puts
// never use it: they are durable before their 200.
const asyncCommit = `SELECT set_config('synchronous_commit', 'off', true)`

// leasePrelude is asyncCommit for a lease, which also runs the statement's generic plan: planning the lease
// anew for each call cost as much as a third of its execution, and its generic plan is the custom one (the
// lease index for the pick, primary-key probes for the update).
const leasePrelude = asyncCommit + `, set_config('plan_cache_mode', 'force_generic_plan', true)`

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
			continue
		}
		return err
	}
}

// Lease leases up to req.Limit messages in one statement (shared with concurrent leases of the same kind: the
// messages' LeaseID then is the one of the first request).
func (r *Messages) Lease(ctx context.Context, req LeaseRequest) ([]LeasedMessage, error) {
	no, err := r.nums.of(ctx, req.QueueID)
	if err != nil {
		return nil, err
	}
	var out []LeasedMessage
	if r.leases != nil {
		key := leaseKey{queueNo: no, groupNo: req.GroupNo, dlq: req.DLQ, channels: strings.Join(req.Channels, "\x00"),
			visibilitySeconds: req.VisibilitySeconds, maxDeliveries: req.MaxDeliveries}
		if len(req.Channels) != 1 {
			key.owner = req.Owner // owners are dealt out per row by the single-channel lease only
		}
		out, err = r.leases.do(ctx, key, req)
	} else {
		out, err = r.lease(ctx, no, req, nil)
	}
	return out, interpretError("leasing messages", err)
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
// (watches) share a single-channel lease that gives each row its request's owner.
func (r *Messages) leaseBatch(ctx context.Context, key leaseKey, items []LeaseRequest) ([][]LeasedMessage, error) {
	req := items[0]
	var owners []*string // per slot, when the owners differ
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
	leased, err := r.lease(ctx, key.queueNo, req, owners)
	if err != nil {
		return nil, err
	}
	out := make([][]LeasedMessage, len(items))
	for i, it := range items {
		n := min(it.Limit, len(leased))
		out[i], leased = leased[:n:n], leased[n:]
	}
	return out, nil
}

// lease runs the lease statement; owners (a single channel only) gives the k-th row by id the k-th owner
// instead of req.Owner to every row.
func (r *Messages) lease(ctx context.Context, no int64, req LeaseRequest, owners []*string) ([]LeasedMessage, error) {
	deadLetter := req.MaxDeliveries > 0 && !req.DLQ
	var query string
	var owner any = nilIfEmpty(req.Owner)
	switch {
	case owners != nil && deadLetter:
		query, owner = messagesLeaseOneOwnersDeadLetter, owners
	case owners != nil:
		query, owner = messagesLeaseOneOwners, owners
	case len(req.Channels) == 1 && deadLetter:
		query = messagesLeaseOneDeadLetter
	case len(req.Channels) == 1:
		query = messagesLeaseOne
	case deadLetter:
		query = messagesLeaseDeadLetter
	default:
		query = messagesLease
	}
	var out []LeasedMessage
	err := r.sendRetrying(ctx, func(batch *pgx.Batch) {
		batch.Queue(leasePrelude)
		batch.Queue(query, no, req.GroupNo, req.Channels, req.DLQ, req.Limit,
			req.VisibilitySeconds, req.LeaseID, req.MaxDeliveries, owner).Query(func(rows pgx.Rows) error {
			var err error
			out, err = collectLeased(rows, req.LeaseID)
			return err
		})
	})
	return out, err
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
	query := messagesLeaseAsConsumer
	if req.MaxDeliveries > 0 && !req.DLQ {
		query = messagesLeaseAsConsumerDeadLetter
	}
	var d ConsumerDecision
	no, err := r.nums.of(ctx, req.QueueID)
	if err != nil {
		return d, nil, err
	}
	var out []LeasedMessage
	err = r.sendRetrying(ctx, func(batch *pgx.Batch) {
		batch.Queue(asyncCommit)
		batch.Queue(consumersLock, req.QueueID, req.GroupNo)
		batch.Queue(consumersDecide, req.QueueID, req.GroupNo, req.Consumer, req.ConsumerLeaseSeconds).QueryRow(func(row pgx.Row) error {
			return d.scan(row)
		})
		batch.Queue(query, no, req.GroupNo, channels, req.DLQ, req.Limit, req.VisibilitySeconds,
			req.LeaseID, req.MaxDeliveries, req.Consumer, req.QueueID).Query(func(rows pgx.Rows) error {
			var err error
			out, err = collectLeased(rows, req.LeaseID)
			return err
		})
	})
	return d, out, interpretError("leasing messages", err)
}

func collectLeased(rows pgx.Rows, leaseID int64) ([]LeasedMessage, error) {
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LeasedMessage, error) {
		m := LeasedMessage{LeaseID: leaseID}
		err := row.Scan(&m.GroupNo, &m.ID, &m.ChannelID, &m.VisibleAt, &m.ExpireAt, &m.DeliveryCount, &m.Content,
			&m.Attributes, &m.Metadata, &m.TimeCreated, &m.DeadLettered, &m.NegativeCode, &m.NegativeText, &m.MessageGroup)
		m.VisibleAt, m.ExpireAt, m.TimeCreated = m.VisibleAt.UTC(), m.ExpireAt.UTC(), m.TimeCreated.UTC()
		return m, err
	})
	sortLeased(out)
	return out, err
}

// Delete acknowledges the receipts' messages and reports, per receipt, whether it deleted the message, and how
// many ordered groups' next messages became visible. Receipts of ordered messages take their groups' locks
// first, in the same round trip (a batch is one implicit transaction).
func (r *Messages) Delete(ctx context.Context, queueID string, receipts []Receipt) (deleted []bool, unblocked int, err error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, 0, err
	}
	ordered := slices.ContainsFunc(receipts, func(rc Receipt) bool { return rc.Ordered && !rc.DLQ })
	if r.deletes != nil && !ordered {
		deleted, err := r.deletes.do(ctx, no, receipts)
		return deleted, 0, interpretError("deleting messages", err)
	}
	done, unblocked, err := r.deleteReceipts(ctx, no, queueID, receipts, ordered)
	if err != nil {
		return nil, 0, interpretError("deleting messages", err)
	}
	return done.of(receipts), unblocked, nil
}

// acknowledge deletes the messages of concurrent acknowledgements without ordered messages (coalescer) in one
// statement, and reports per receipt whether it deleted the message. A message whose receipt two of them hold
// is deleted once, and reported deleted to both.
func (r *Messages) acknowledge(ctx context.Context, queueNo int64, items [][]Receipt) ([][]bool, error) {
	all := items[0]
	if len(items) > 1 {
		all = slices.Concat(items...)
	}
	done, _, err := r.deleteReceipts(ctx, queueNo, "", all, false)
	if err != nil {
		return nil, err
	}
	out := make([][]bool, len(items))
	for i, receipts := range items {
		out[i] = done.of(receipts)
	}
	return out, nil
}

// deletedSet holds the (group, id) of the messages an acknowledgement deleted.
type deletedSet map[[2]int64]bool

// of reports, per receipt, whether its message was deleted.
func (d deletedSet) of(receipts []Receipt) []bool {
	out := make([]bool, len(receipts))
	for i, rc := range receipts {
		out[i] = d[[2]int64{int64(rc.GroupNo), rc.ID}]
	}
	return out
}

// deleteReceipts runs the acknowledgement statement for receipts, committing asynchronously. With ordered
// receipts (queueID names their groups' locks) it takes the groups' locks first and unblocks each group's next
// message, in the same round trip (a batch is one implicit transaction); unblocked counts those.
func (r *Messages) deleteReceipts(ctx context.Context, queueNo int64, queueID string, receipts []Receipt,
	ordered bool) (done deletedSet, unblocked int, err error) {
	groups, ids, leases, dlqs := receiptArrays(receipts)
	err = r.sendRetrying(ctx, func(batch *pgx.Batch) {
		done, unblocked = make(deletedSet, len(receipts)), 0
		query := messagesDelete
		if ordered {
			batch.Queue(messagesLockReceiptGroups, queueNo, groups, ids, queueID)
			query = messagesDeleteOrdered
		}
		batch.Queue(asyncCommit)
		batch.Queue(query, queueNo, groups, ids, leases, dlqs).Query(func(rows pgx.Rows) error {
			var g int32
			var id int64
			var next bool
			_, err := pgx.ForEachRow(rows, []any{&g, &id, &next}, func() error {
				if next {
					unblocked++
				} else {
					done[[2]int64{int64(g), id}] = true
				}
				return nil
			})
			return err
		})
	})
	return done, unblocked, err
}

// UpdateVisibility moves the leases' visible_at to now()+seconds[i]; it returns the new visible_at per receipt
// (nil where the receipt no longer holds the lease).
func (r *Messages) UpdateVisibility(ctx context.Context, queueID string, receipts []Receipt, seconds []int32) ([]*time.Time, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	groups, ids, leases, dlqs := receiptArrays(receipts)
	rows, err := r.pool.Query(ctx, messagesUpdateVisibility, no, groups, ids, leases, dlqs, seconds)
	if err != nil {
		return nil, interpretError("updating messages", err)
	}
	got := map[[2]int64]time.Time{}
	var g int32
	var id int64
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&g, &id, &at}, func() error { got[[2]int64{int64(g), id}] = at.UTC(); return nil }); err != nil {
		return nil, interpretError("updating messages", err)
	}
	out := make([]*time.Time, len(receipts))
	for i, rc := range receipts {
		if t, ok := got[[2]int64{int64(rc.GroupNo), rc.ID}]; ok {
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
	rows, err := r.pool.Query(ctx, messagesExisting, no, groups, ids)
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

// Stats counts a group's messages (channelID "" = all channels): the queue's and its DLQ's.
func (r *Messages) Stats(ctx context.Context, queueID string, groupNo int32, channelID string) (queue, dlq Stats, err error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return queue, dlq, err
	}
	rows, err := r.pool.Query(ctx, messagesStats, no, groupNo, channelID)
	if err != nil {
		return queue, dlq, interpretError("queue stats", err)
	}
	var isDLQ bool
	var s Stats
	_, err = pgx.ForEachRow(rows, []any{&isDLQ, &s.Visible, &s.InFlight, &s.Delayed, &s.SizeBytes}, func() error {
		if isDLQ {
			dlq = s
		} else {
			queue = s
		}
		return nil
	})
	return queue, dlq, interpretError("queue stats", err)
}

// Channels lists up to limit distinct channel ids after from (or from itself too, when inclusive) that hold
// messages of the group, in index order.
func (r *Messages) Channels(ctx context.Context, queueID string, groupNo int32, dlq bool, from string, inclusive bool, limit int) ([]string, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	rows, err := r.pool.Query(ctx, messagesChannels, no, groupNo, dlq, from, limit, inclusive)
	if err != nil {
		return nil, interpretError("listing channels", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, interpretError("listing channels", err)
}

// Redrive moves up to limit of the group's DLQ messages back to the queue, oldest first, in one transaction.
// Messages of ordered groups rejoin their group's order (under the group's lock).
func (r *Messages) Redrive(ctx context.Context, queueID string, groupNo int32, limit int) (int64, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return 0, err
	}
	var n int64
	err = InTx(ctx, r.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, messagesRedrivePick, no, groupNo, limit)
		if err != nil {
			return err
		}
		var ids []int64
		var names []*string
		var lockGroupNos []int32
		var lockNames []string
		var id int64
		var name *string
		if _, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error {
			ids, names = append(ids, id), append(names, name)
			if name != nil {
				lockGroupNos, lockNames = append(lockGroupNos, groupNo), append(lockNames, *name)
			}
			return nil
		}); err != nil || len(ids) == 0 {
			return err
		}
		if len(lockNames) > 0 {
			if _, err := tx.Exec(ctx, messagesLockGroups, queueID, lockGroupNos, lockNames); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, messagesRedrive, no, groupNo, ids, names)
		n = tag.RowsAffected()
		return err
	})
	return n, interpretError("redriving messages", err)
}

// PurgeBatch deletes up to batch messages of the queue with ids at or below upTo (dlq nil = queue and DLQ) and
// returns how many. Ordered groups that lost their head continue with their next message.
func (r *Messages) PurgeBatch(ctx context.Context, queueID string, dlq *bool, upTo int64, batch int) (int64, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return 0, err
	}
	n, err := r.deleteBatch(ctx, queueID, no, dlq, messagesPurgePick, no, dlq, batch, upTo)
	return n, interpretError("purging messages", err)
}

// deleteBatch deletes the rows that pick selects (group_no, id, message_group) in one transaction. When some
// belong to ordered groups it takes those groups' locks before deleting — as puts and acknowledgements do: locks
// first, then rows, so no deadlock — and afterwards makes the next message of each group that lost its head
// visible, with a snapshot that sees every put that queued behind a deleted head. The other nodes are told after
// the commit.
func (r *Messages) deleteBatch(ctx context.Context, queueID string, queueNo int64, dlq *bool, pick string, pickArgs ...any) (int64, error) {
	var deleted, unblocked int64
	err := InTx(ctx, r.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, pick, pickArgs...)
		if err != nil {
			return err
		}
		var groupNos, lockGroupNos []int32
		var ids []int64
		var lockNames []string
		seen := map[string]bool{}
		var g int32
		var id int64
		var name *string
		if _, err := pgx.ForEachRow(rows, []any{&g, &id, &name}, func() error {
			groupNos, ids = append(groupNos, g), append(ids, id)
			// DLQ rows are out of their group's order, but one may be redriven before the delete: lock it too.
			if key := strconv.Itoa(int(g)) + "/" + deref(name); name != nil && !seen[key] {
				seen[key] = true
				lockGroupNos, lockNames = append(lockGroupNos, g), append(lockNames, *name)
			}
			return nil
		}); err != nil || len(ids) == 0 {
			return err
		}
		if len(lockNames) > 0 {
			if _, err := tx.Exec(ctx, messagesLockGroups, queueID, lockGroupNos, lockNames); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, messagesDeletePicked, queueNo, groupNos, ids, dlq)
		if err != nil {
			return err
		}
		deleted = tag.RowsAffected()
		if len(lockNames) > 0 {
			return tx.QueryRow(ctx, messagesUnblockGroups, queueNo, lockGroupNos, lockNames).Scan(&unblocked)
		}
		return nil
	})
	if err != nil {
		return deleted, err
	}
	if unblocked > 0 {
		return deleted, Notify(ctx, r.pool, Notification{Kind: MessagesAvailable, QueueID: queueID})
	}
	return deleted, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// LastID is the highest message id allocated so far: every message published before the call has an id at or
// below it, every message published after it a higher one.
func (r *Messages) LastID(ctx context.Context) (int64, error) {
	var id int64
	err := r.pool.QueryRow(ctx, messagesLastID).Scan(&id)
	return id, interpretError("reading the last message id", err)
}

// DeleteOrphans deletes up to batch messages of queues deleted in the last day (left by puts that raced the
// delete) and returns how many.
func (r *Messages) DeleteOrphans(ctx context.Context, batch int) (int64, error) {
	tag, err := r.pool.Exec(ctx, messagesDeleteOrphans, batch)
	return tag.RowsAffected(), interpretError("deleting messages of deleted queues", err)
}

// ExpireBatch deletes up to batch messages of the queue (every consumer group, a primary-key range each) whose id
// is at or below cutoff.
func (r *Messages) ExpireBatch(ctx context.Context, queueID string, cutoff int64, batch int) (int64, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return 0, err
	}
	n, err := r.deleteBatch(ctx, queueID, no, nil, messagesExpirePick, no, cutoff, batch, queueID)
	return n, interpretError("expiring messages", err)
}

// SizeByChannel sums the stored bytes of a queue (every group and the DLQ) per channel, and returns the highest
// message id it counted: a put whose messages all have higher ids is not in the sums (a batch commits whole, so
// had it been seen, its highest id would have been too).
func (r *Messages) SizeByChannel(ctx context.Context, queueID string) (sizes map[string]int64, maxID int64, _ error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, 0, err
	}
	rows, err := r.pool.Query(ctx, messagesSizeByChannel, no)
	if err != nil {
		return nil, 0, interpretError("queue size", err)
	}
	out := map[string]int64{}
	var ch string
	var n, id int64
	_, err = pgx.ForEachRow(rows, []any{&ch, &n, &id}, func() error {
		out[ch] = n
		maxID = max(maxID, id)
		return nil
	})
	return out, maxID, interpretError("queue size", err)
}

// RecordWatermark remembers the id sequence's position now, and forgets positions older than any retention.
func (r *Messages) RecordWatermark(ctx context.Context) error {
	if _, err := r.pool.Exec(ctx, watermarkRecord); err != nil {
		return interpretError("recording id watermark", err)
	}
	_, err := r.pool.Exec(ctx, watermarkPrune)
	return interpretError("pruning id watermarks", err)
}

// ExpiryCutoff is the highest message id that was allocated at least retentionSeconds ago (0 when unknown).
func (r *Messages) ExpiryCutoff(ctx context.Context, retentionSeconds int32) (int64, error) {
	var id int64
	err := r.pool.QueryRow(ctx, watermarkCutoff, retentionSeconds).Scan(&id)
	return id, interpretError("expiry cutoff", err)
}

// ExpireDedupKeys deletes up to batch expired deduplication keys.
func (r *Messages) ExpireDedupKeys(ctx context.Context, batch int) (int64, error) {
	tag, err := r.pool.Exec(ctx, dedupExpire, batch)
	return tag.RowsAffected(), interpretError("expiring dedup keys", err)
}

// Notify sends the notifications (wake-ups of other nodes) in one statement.
func (r *Messages) Notify(ctx context.Context, list []Notification) error {
	return interpretError("notifying", Notify(ctx, r.pool, list...))
}

func receiptArrays(receipts []Receipt) (groups []int32, ids, leases []int64, dlqs []bool) {
	for _, rc := range receipts {
		groups, ids, leases, dlqs = append(groups, rc.GroupNo), append(ids, rc.ID), append(leases, rc.LeaseID), append(dlqs, rc.DLQ)
	}
	return
}

func jsonText(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

// AddDiscarded counts messages that no consumer group took.
func (r *Messages) AddDiscarded(ctx context.Context, queueID string, n int64) error {
	_, err := r.pool.Exec(ctx, `INSERT INTO queue_discards (queue_id, discarded) VALUES ($1, $2)
		ON CONFLICT (queue_id) DO UPDATE SET discarded = queue_discards.discarded + excluded.discarded`, queueID, n)
	return interpretError("counting discarded messages", err)
}

// Discarded is how many of the queue's messages no consumer group took.
func (r *Messages) Discarded(ctx context.Context, queueID string) (int64, error) {
	var n int64
	err := r.pool.QueryRow(ctx, `SELECT coalesce((SELECT discarded FROM queue_discards WHERE queue_id = $1), 0)`, queueID).Scan(&n)
	return n, interpretError("reading discarded messages", err)
}
