package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Consumers is the repository of the consumers of single-active-consumer queues (DESIGN section 7). The decision
// of who is active is made in SQL, under a per-group advisory lock, so every node agrees: the live consumer (one
// whose last call is within the queue's consumerLeaseInSeconds) that registered first. Messages.LeaseAsConsumer
// registers and decides in the same transaction as its lease.
type Consumers struct{ pool *pgxpool.Pool }

// NewConsumers builds the repository.
func NewConsumers(pool *pgxpool.Pool) *Consumers { return &Consumers{pool: pool} }

// ConsumerDecision is what consumers.decide answered for the calling consumer.
type ConsumerDecision struct {
	Active      bool  // the caller is the group's active consumer
	TookOver    bool  // it became active with this call
	Released    int64 // the previous consumers' unacknowledged messages made visible by the takeover
	ActiveID    string
	ActiveUntil time.Time // when the active consumer's lease ends unless it calls again (zero when the caller is active)
}

func (d *ConsumerDecision) scan(row pgx.Row) error {
	var activeID *string
	var until *time.Time
	if err := row.Scan(&d.Active, &d.TookOver, &d.Released, &activeID, &until); err != nil {
		return err
	}
	if d.Active {
		return nil
	}
	if activeID != nil {
		d.ActiveID = *activeID
	}
	if until != nil {
		d.ActiveUntil = until.UTC()
	}
	return nil
}

const (
	// The per-group lock that serialises consumer decisions (and leaves). The key space differs from the
	// ordered-group locks by its seed.
	consumersLock = `-- consumers.lock
		SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2::int, 1))`

	// registered_at is clock_timestamp(), read under the group's lock, not now(): now() is when the transaction
	// began, before it waited for the lock, so a consumer that registered later could sort before the one whose
	// decision it waited for — and both would be active.
	// Register or renew $3 and decide, in one statement: forget the other consumers that lapsed; the caller is
	// active when no other live consumer registered before it (a caller that lapsed or left registers again, at
	// the back). When it becomes active with this call (active_since = now(): set by this statement), every
	// message of the group still leased by another consumer becomes visible at once — the previous active
	// consumer's unacknowledged messages, delivered first since the consumer lease orders by id (found through
	// messages_lease_owner, without reading the group's backlog). The answer also names the
	// active consumer and when its lease ends, so that a standby knows when to look again.
	consumersDecide = `-- consumers.decide
		WITH lapsed AS (
			DELETE FROM consumers WHERE queue_id = $1 AND group_no = $2 AND consumer_id <> $3
				AND last_seen < now() - make_interval(secs => $4)
		), first_other AS (
			SELECT consumer_id, registered_at, last_seen FROM consumers
			WHERE queue_id = $1 AND group_no = $2 AND consumer_id <> $3 AND last_seen >= now() - make_interval(secs => $4)
				AND left_at IS NULL AND NOT leaving
			ORDER BY registered_at, consumer_id LIMIT 1
		), me AS (
			INSERT INTO consumers AS c (queue_id, group_no, consumer_id, registered_at, last_seen, active_since)
			SELECT $1, $2, $3, clock_timestamp(), now(), CASE WHEN NOT EXISTS (SELECT 1 FROM first_other) THEN now() END
			ON CONFLICT (queue_id, group_no, consumer_id) DO UPDATE SET
				last_seen = now(),
				left_at = NULL,
				registered_at = CASE WHEN c.last_seen < now() - make_interval(secs => $4) OR c.left_at IS NOT NULL
					THEN clock_timestamp() ELSE c.registered_at END,
				active_since = CASE
					WHEN EXISTS (SELECT 1 FROM first_other o WHERE (o.registered_at, o.consumer_id) <
						(CASE WHEN c.last_seen < now() - make_interval(secs => $4) OR c.left_at IS NOT NULL
							THEN clock_timestamp() ELSE c.registered_at END, $3::text))
						THEN NULL
					WHEN c.last_seen < now() - make_interval(secs => $4) OR c.left_at IS NOT NULL THEN now()
					ELSE coalesce(c.active_since, now()) END
			RETURNING c.active_since
		), released AS (
			UPDATE messages m SET visible_at = now()
			WHERE m.queue_no = ` + queueNoOfParam1 + ` AND m.group_no = $2 AND m.lease_owner IS NOT NULL AND m.lease_owner <> $3
				AND NOT m.dlq AND m.visible_at > now() AND m.visible_at < 'infinity'
				AND EXISTS (SELECT 1 FROM me WHERE me.active_since = now())
			RETURNING 1
		)
		SELECT me.active_since IS NOT NULL, coalesce(me.active_since = now(), false), (SELECT count(*) FROM released),
			o.consumer_id, o.last_seen + make_interval(secs => $4)
		FROM me LEFT JOIN first_other o ON true`

	// A consumer leaves ($4: only the watch session that owns the registration; NULL: whoever): it is marked
	// left (listed as EXIT until swept), and its unacknowledged messages become visible at once, with their lease
	// revoked (the old receipts no longer acknowledge them). The next consumer of a single-active-consumer group
	// takes over on its next call.
	consumersLeave = `-- consumers.leave
		WITH gone AS (
			UPDATE consumers SET left_at = now(), leaving = false
			WHERE queue_id = $1 AND group_no = $2 AND consumer_id = $3 AND left_at IS NULL
				AND ($4::text IS NULL OR session_id = $4)
			RETURNING 1
		), removed AS (
			-- a watch whose consumer was removed meanwhile (DELETE /consumers) still releases what it leased since
			SELECT 1 FROM consumers WHERE queue_id = $1 AND group_no = $2 AND consumer_id = $3 AND session_id = $4
		), released AS (` + releaseOwned + `
				AND (EXISTS (SELECT 1 FROM gone) OR EXISTS (SELECT 1 FROM removed))
			RETURNING 1
		)
		SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM released)`

	// The consumers of a queue ($2: of one group) in registration order, with the messages each holds (found
	// through messages_lease_owner): live ones, watches whose heartbeat stopped, and those that left within the
	// last $3 seconds. The service decides the status.
	consumersList = `-- consumers.list
		SELECT c.group_no, c.consumer_id, c.kind, c.registered_at, c.last_seen, c.left_at, c.leaving, c.window_size,
			c.auto_commit, c.delivered, c.last_active, now(),
			(SELECT count(*) FROM messages m WHERE m.queue_no = ` + queueNoOfParam1 + ` AND m.group_no = c.group_no
				AND m.lease_owner = c.consumer_id AND NOT m.dlq AND m.visible_at > now() AND m.visible_at < 'infinity')
		FROM consumers c
		WHERE c.queue_id = $1 AND ($2::int IS NULL OR c.group_no = $2)
			AND (c.left_at IS NULL OR c.left_at >= now() - make_interval(secs => $3))
		ORDER BY c.group_no, c.registered_at, c.consumer_id`

	// Consumers that stopped calling long ago (any lease is at most 300 s), and those that left more than $2
	// seconds ago; decisions forget lapsed ones of their own group, this sweeps groups that nobody calls any more.
	consumersSweep = `-- consumers.sweep
		DELETE FROM consumers WHERE ctid = ANY (ARRAY (
			SELECT ctid FROM consumers WHERE last_seen < now() - interval '1 hour'
			UNION ALL
			SELECT ctid FROM consumers WHERE left_at < now() - make_interval(secs => $2)
			LIMIT $1))`
)

// ConsumerRow is a registered consumer of a queue (ListAll).
type ConsumerRow struct {
	GroupNo        int32
	ID             string
	Watch          bool // a push consumer (watch); else a single active consumer's GetMessages registered it
	Partition      bool // a consumer of a PARTITION group (GetPartitionMessages registered it)
	TimeRegistered time.Time
	LastSeen       time.Time
	LeftAt         *time.Time
	Leaving        bool
	Window         *int32
	AutoCommit     bool
	Delivered      int64
	LastActive     *time.Time
	Now            time.Time // the database's clock when listed (for idle times)
	Pending        int64     // messages it holds: leased to it and not acknowledged
}

// ExitRetention is how long a consumer that left is still listed (as EXIT) before the maintainer sweeps it.
const ExitRetention = time.Minute

// ListAll returns the registered consumers of a queue (groupNo nil = every group), each group's in registration
// order, including those that left within ExitRetention.
func (r *Consumers) ListAll(ctx context.Context, queueID string, groupNo *int32) ([]ConsumerRow, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, consumersList, queueID, groupNo, int32(ExitRetention/time.Second))
	if err != nil {
		return nil, interpretError("listing consumers", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ConsumerRow, error) {
		var c ConsumerRow
		var kind string
		err := row.Scan(&c.GroupNo, &c.ID, &kind, &c.TimeRegistered, &c.LastSeen, &c.LeftAt, &c.Leaving, &c.Window,
			&c.AutoCommit, &c.Delivered, &c.LastActive, &c.Now, &c.Pending)
		c.Watch, c.Partition = kind == "watch", kind == "partition"
		return c, err
	})
	return out, interpretError("listing consumers", err)
}

// Leave marks a consumer as left and makes its unacknowledged messages visible; found is false when no such
// consumer is registered. sessionID (a watch's) leaves only that session's registration; "" = whoever holds it.
func (r *Consumers) Leave(ctx context.Context, queueID string, groupNo int32, consumerID, sessionID string) (found bool, released int64, err error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var gone int64
	var session *string
	if sessionID != "" {
		session = &sessionID
	}
	batch := &pgx.Batch{}
	batch.Queue(consumersLock, queueID, groupNo)
	batch.Queue(consumersLeave, queueID, groupNo, consumerID, session).QueryRow(func(row pgx.Row) error {
		return row.Scan(&gone, &released)
	})
	err = r.pool.SendBatch(ctx, batch).Close()
	return gone > 0, released, interpretError("removing consumer", err)
}

// Sweep deletes up to batch consumers that stopped calling more than an hour ago or left more than
// ExitRetention ago, and returns how many.
func (r *Consumers) Sweep(ctx context.Context, batch int) (int64, error) {
	tag, err := r.pool.Exec(ctx, consumersSweep, batch, int32(ExitRetention/time.Second))
	return tag.RowsAffected(), interpretError("sweeping consumers", err)
}
