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

// ConsumerInfo is a live consumer of a consumer group.
type ConsumerInfo struct {
	ID             string
	Active         bool
	TimeRegistered time.Time
	LastSeen       time.Time
	Now            time.Time // the database's clock when listed (for idle times)
}

const (
	// The per-group lock that serialises consumer decisions (and leaves). The key space differs from the
	// ordered-group locks by its seed.
	consumersLock = `-- consumers.lock
		SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2::int, 1))`

	// Register or renew $3 and decide, in one statement: forget the other consumers that lapsed; the caller is
	// active when no other live consumer registered before it (a caller that lapsed itself registers again, at
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
			ORDER BY registered_at, consumer_id LIMIT 1
		), me AS (
			INSERT INTO consumers AS c (queue_id, group_no, consumer_id, registered_at, last_seen, active_since)
			SELECT $1, $2, $3, now(), now(), CASE WHEN NOT EXISTS (SELECT 1 FROM first_other) THEN now() END
			ON CONFLICT (queue_id, group_no, consumer_id) DO UPDATE SET
				last_seen = now(),
				registered_at = CASE WHEN c.last_seen < now() - make_interval(secs => $4) THEN now() ELSE c.registered_at END,
				active_since = CASE
					WHEN EXISTS (SELECT 1 FROM first_other o WHERE (o.registered_at, o.consumer_id) <
						(CASE WHEN c.last_seen < now() - make_interval(secs => $4) THEN now() ELSE c.registered_at END, $3::text))
						THEN NULL
					WHEN c.last_seen < now() - make_interval(secs => $4) THEN now()
					ELSE coalesce(c.active_since, now()) END
			RETURNING c.active_since
		), released AS (
			UPDATE messages m SET visible_at = now()
			WHERE m.queue_id = $1 AND m.group_no = $2 AND m.lease_owner IS NOT NULL AND m.lease_owner <> $3
				AND NOT m.dlq AND m.visible_at > now() AND m.visible_at < 'infinity'
				AND EXISTS (SELECT 1 FROM me WHERE me.active_since = now())
			RETURNING 1
		)
		SELECT me.active_since IS NOT NULL, coalesce(me.active_since = now(), false), (SELECT count(*) FROM released),
			o.consumer_id, o.last_seen + make_interval(secs => $4)
		FROM me LEFT JOIN first_other o ON true`

	// A consumer leaves: its row goes, and its unacknowledged messages become visible at once (the next
	// consumer takes over on its next call).
	consumersLeave = `-- consumers.leave
		WITH gone AS (
			DELETE FROM consumers WHERE queue_id = $1 AND group_no = $2 AND consumer_id = $3 RETURNING 1
		), released AS (
			UPDATE messages m SET visible_at = now()
			WHERE m.queue_id = $1 AND m.group_no = $2 AND m.lease_owner = $3
				AND NOT m.dlq AND m.visible_at > now() AND m.visible_at < 'infinity' AND EXISTS (SELECT 1 FROM gone)
			RETURNING 1
		)
		SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM released)`

	// The live consumers of a group in registration order: the first one is the active consumer.
	consumersList = `-- consumers.list
		SELECT consumer_id, registered_at, last_seen, now() FROM consumers
		WHERE queue_id = $1 AND group_no = $2 AND last_seen >= now() - make_interval(secs => $3)
		ORDER BY registered_at, consumer_id`

	// Consumers that stopped calling long ago (any lease is at most 300 s); decisions forget lapsed ones of their
	// own group, this sweeps groups that nobody calls any more.
	consumersSweep = `-- consumers.sweep
		DELETE FROM consumers WHERE ctid = ANY (ARRAY (
			SELECT ctid FROM consumers WHERE last_seen < now() - interval '1 hour' LIMIT $1))`
)

// List returns the live consumers of a consumer group, the active one first.
func (r *Consumers) List(ctx context.Context, queueID string, groupNo, leaseSeconds int32) ([]ConsumerInfo, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, consumersList, queueID, groupNo, leaseSeconds)
	if err != nil {
		return nil, interpretError("listing consumers", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ConsumerInfo, error) {
		var c ConsumerInfo
		err := row.Scan(&c.ID, &c.TimeRegistered, &c.LastSeen, &c.Now)
		c.TimeRegistered, c.LastSeen, c.Now = c.TimeRegistered.UTC(), c.LastSeen.UTC(), c.Now.UTC()
		return c, err
	})
	if len(out) > 0 {
		out[0].Active = true
	}
	return out, interpretError("listing consumers", err)
}

// Leave removes a consumer and makes its unacknowledged messages visible; found is false when no such consumer
// is registered.
func (r *Consumers) Leave(ctx context.Context, queueID string, groupNo int32, consumerID string) (found bool, released int64, err error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var gone int64
	batch := &pgx.Batch{}
	batch.Queue(consumersLock, queueID, groupNo)
	batch.Queue(consumersLeave, queueID, groupNo, consumerID).QueryRow(func(row pgx.Row) error {
		return row.Scan(&gone, &released)
	})
	err = r.pool.SendBatch(ctx, batch).Close()
	return gone > 0, released, interpretError("removing consumer", err)
}

// Sweep deletes up to batch consumers that stopped calling more than an hour ago and returns how many.
func (r *Consumers) Sweep(ctx context.Context, batch int) (int64, error) {
	tag, err := r.pool.Exec(ctx, consumersSweep, batch)
	return tag.RowsAffected(), interpretError("sweeping consumers", err)
}
