package persistence

import (
	"context"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// Push consumers (watch over WebSocket, DESIGN section 7) register in the consumers table like the consumers of
// single-active-consumer queues, with kind 'watch' and the session (the open WebSocket) that owns the row. The
// node that holds a watch heartbeats all its watches in one statement every few seconds; a watch whose heartbeat
// stopped (its node died) is dead, and the leases of its messages, no longer renewed, expire.

// Watch is one open watch of this node.
type Watch struct {
	QueueID    string
	GroupNo    int32
	ConsumerID string
	TenancyID  string
	SessionID  string
	Window     int32
	AutoCommit bool
	Delivered  int64
	Leaving    bool
	LastActive time.Time
	// Partition: the watch is a member of a PARTITION group; its registration has kind 'partition', the kind the
	// group's assignment counts (docs/partitions.md).
	Partition bool
}

func (w Watch) kind() string {
	if w.Partition {
		return "partition"
	}
	return "watch"
}

// OpenWatchResult is the outcome of OpenWatch.
type OpenWatchResult int

// Outcomes of OpenWatch.
const (
	WatchOpened       OpenWatchResult = iota
	WatchConsumerBusy                 // the consumer already has a live open watch on this consumer group
	WatchTenancyFull                  // the tenancy has its maximum number of open watches
)

const (
	// Another live watch of the same consumer (one that heartbeats within $5 seconds and has not left). A watch
	// on a PARTITION group has kind 'partition' and a session.
	watchBusy = `-- consumers.watch_busy
		SELECT EXISTS (SELECT 1 FROM consumers WHERE queue_id = $1 AND group_no = $2 AND consumer_id = $3
			AND (kind = 'watch' OR kind = 'partition' AND session_id IS NOT NULL)
			AND left_at IS NULL AND session_id IS DISTINCT FROM $4 AND last_seen >= now() - make_interval(secs => $5))`

	// The tenancy's live open watches.
	watchCount = `-- consumers.watch_count
		SELECT count(*) FROM consumers WHERE tenancy_id = $1
			AND (kind = 'watch' OR kind = 'partition' AND session_id IS NOT NULL) AND left_at IS NULL
			AND last_seen >= now() - make_interval(secs => $2)`

	// Register the watch. A consumer that was registered and is still live (a single active consumer that
	// polled, then watches) keeps its place in line; one that lapsed or left registers again, at the back.
	watchRegister = `-- consumers.watch_register
		INSERT INTO consumers AS c (queue_id, group_no, consumer_id, registered_at, last_seen, kind, tenancy_id,
			session_id, window_size, auto_commit, delivered, leaving, left_at, last_active)
		VALUES ($1, $2, $3, clock_timestamp(), now(), $9, $6, $4, $7, $8, 0, false, NULL, now())
		ON CONFLICT (queue_id, group_no, consumer_id) DO UPDATE SET
			registered_at = CASE WHEN c.left_at IS NOT NULL OR c.last_seen < now() - make_interval(secs => $5)
				THEN clock_timestamp() ELSE c.registered_at END,
			active_since = CASE WHEN c.left_at IS NOT NULL OR c.last_seen < now() - make_interval(secs => $5)
				THEN NULL ELSE c.active_since END,
			last_seen = now(), kind = $9, tenancy_id = $6, session_id = $4, window_size = $7, auto_commit = $8,
			delivered = 0, leaving = false, left_at = NULL, last_active = now()`

	// The heartbeat of a node's watches: renew each one that its session still owns (re-register one whose row
	// was swept or forgotten as lapsed), and answer the sessions that still own their registration. A watch that
	// left (DELETE /consumers) or whose consumer opened a watch elsewhere is not answered: it stops.
	watchHeartbeat = `-- consumers.watch_heartbeat
		INSERT INTO consumers AS c (queue_id, group_no, consumer_id, registered_at, last_seen, kind, tenancy_id,
			session_id, window_size, auto_commit, delivered, leaving, last_active)
		SELECT u.queue_id, u.group_no, u.consumer_id, now(), now(), u.kind, u.tenancy_id, u.session_id, u.window_size,
			u.auto_commit, u.delivered, u.leaving, u.last_active
		FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::int[], $7::bool[], $8::bigint[],
			$9::bool[], $10::timestamptz[], $11::text[]) AS u(queue_id, group_no, consumer_id, tenancy_id, session_id,
			window_size, auto_commit, delivered, leaving, last_active, kind)
		ON CONFLICT (queue_id, group_no, consumer_id) DO UPDATE SET
			last_seen = now(), kind = excluded.kind, session_id = excluded.session_id, delivered = excluded.delivered,
			leaving = excluded.leaving, last_active = excluded.last_active
		WHERE c.left_at IS NULL AND (c.session_id IS NULL OR c.session_id = excluded.session_id)
		RETURNING c.session_id`

	// The consumer sent Shutdown: it gives up its place (a single active consumer's standby takes over).
	watchLeaving = `-- consumers.watch_leaving
		UPDATE consumers SET leaving = true
		WHERE queue_id = $1 AND group_no = $2 AND consumer_id = $3 AND session_id = $4 AND left_at IS NULL`

	// Extend the leases a watch's consumer holds that end within $5 seconds, by $4 seconds from now (found
	// through messages_lease_owner). Leases that already ended are not revived: their messages may be leased
	// by another consumer at any moment.
	watchRenew = `-- messages.renew_owned
		UPDATE messages SET visible_at = now() + make_interval(secs => $4)
		WHERE queue_no = ` + queueNoOfParam1 + ` AND group_no = $2 AND lease_owner = $3 AND NOT dlq
			AND visible_at > now() AND visible_at < now() + make_interval(secs => $5)`

	// Release every message consumer $3 holds: visible at once, its lease revoked (consumers.leave releases with
	// it, under a condition).
	releaseOwned = `
		UPDATE messages m SET visible_at = now(), lease_owner = NULL, lease_id = 0
		WHERE m.queue_no = ` + queueNoOfParam1 + ` AND m.group_no = $2 AND m.lease_owner = $3
			AND NOT m.dlq AND m.visible_at > now() AND m.visible_at < 'infinity'`
	watchRelease = `-- messages.release_owned` + releaseOwned
)

// OpenWatch registers a watch, unless its consumer already has another live watch on the group or the tenancy
// has maxPerTenancy open watches. Under the group's consumer lock, so two nodes cannot both open a watch for the
// same consumer. liveSeconds is how recent a heartbeat (or a call) must be for a registration to count as live.
func (r *Consumers) OpenWatch(ctx context.Context, w Watch, liveSeconds int32, maxPerTenancy int) (OpenWatchResult, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	result := WatchOpened
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, consumersLock, w.QueueID, w.GroupNo); err != nil {
			return err
		}
		var busy bool
		if err := tx.QueryRow(ctx, watchBusy, w.QueueID, w.GroupNo, w.ConsumerID, w.SessionID, liveSeconds).Scan(&busy); err != nil {
			return err
		}
		if busy {
			result = WatchConsumerBusy
			return nil
		}
		var open int
		if err := tx.QueryRow(ctx, watchCount, w.TenancyID, liveSeconds).Scan(&open); err != nil {
			return err
		}
		if open >= maxPerTenancy {
			result = WatchTenancyFull
			return nil
		}
		_, err := tx.Exec(ctx, watchRegister, w.QueueID, w.GroupNo, w.ConsumerID, w.SessionID, liveSeconds, w.TenancyID,
			w.Window, w.AutoCommit, w.kind())
		return err
	})
	return result, interpretError("opening watch", err)
}

// Heartbeat renews the registrations of a node's watches in one statement and returns the sessions that still
// own theirs.
func (r *Consumers) Heartbeat(ctx context.Context, watches []Watch) (map[string]bool, error) {
	if len(watches) == 0 {
		return map[string]bool{}, nil
	}
	// One order for every node's heartbeat: two statements never lock the same rows in opposite orders.
	sorted := append([]Watch(nil), watches...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.QueueID != b.QueueID {
			return a.QueueID < b.QueueID
		}
		if a.GroupNo != b.GroupNo {
			return a.GroupNo < b.GroupNo
		}
		return a.ConsumerID < b.ConsumerID
	})
	n := len(sorted)
	queues, consumers, tenancies, sessions := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	groups, windows := make([]int32, n), make([]int32, n)
	auto, leaving := make([]bool, n), make([]bool, n)
	delivered := make([]int64, n)
	active := make([]time.Time, n)
	kinds := make([]string, n)
	for i, w := range sorted {
		kinds[i] = w.kind()
		queues[i], groups[i], consumers[i], tenancies[i], sessions[i] = w.QueueID, w.GroupNo, w.ConsumerID, w.TenancyID, w.SessionID
		windows[i], auto[i], delivered[i], leaving[i], active[i] = w.Window, w.AutoCommit, w.Delivered, w.Leaving, w.LastActive
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, watchHeartbeat, queues, groups, consumers, tenancies, sessions, windows, auto, delivered, leaving, active, kinds)
	if err != nil {
		return nil, interpretError("heartbeat of watches", err)
	}
	owned := map[string]bool{}
	var session string
	_, err = pgx.ForEachRow(rows, []any{&session}, func() error { owned[session] = true; return nil })
	return owned, interpretError("heartbeat of watches", err)
}

// Leaving marks a watch's consumer as leaving (it sent Shutdown).
func (r *Consumers) Leaving(ctx context.Context, queueID string, groupNo int32, consumerID, sessionID string) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := r.pool.Exec(ctx, watchLeaving, queueID, groupNo, consumerID, sessionID)
	return interpretError("marking consumer leaving", err)
}

// RenewLeases extends the leases the consumer holds that end within within, to lease from now.
func (r *Messages) RenewLeases(ctx context.Context, queueID string, groupNo int32, consumerID string, lease, within time.Duration) (int64, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	tag, err := r.pool.Exec(ctx, watchRenew, queueID, groupNo, consumerID, lease.Seconds(), within.Seconds())
	return tag.RowsAffected(), interpretError("renewing leases", err)
}

// ReleaseOwned makes every message the consumer holds visible at once and revokes its leases.
func (r *Messages) ReleaseOwned(ctx context.Context, queueID string, groupNo int32, consumerID string) (int64, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	tag, err := r.pool.Exec(ctx, watchRelease, queueID, groupNo, consumerID)
	return tag.RowsAffected(), interpretError("releasing messages", err)
}

// Negative releases the receipts' messages at once, recording code and reason on them, and reports per receipt
// whether its lease was still held.
func (r *Messages) Negative(ctx context.Context, queueID string, receipts []Receipt, code, reason string) ([]bool, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	groups, ids, leases, dlqs := receiptArrays(receipts)
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := messagesNegative.query(ctx, r.pool, arg{"queue_no", no}, arg{"lease_ids", leases}, arg{"group_nos", groups},
		arg{"ids", ids}, arg{"dlqs", dlqs}, arg{"code", code}, arg{"reason", nilIfEmpty(reason)})
	if err != nil {
		return nil, interpretError("releasing messages", err)
	}
	done := map[[2]int64]bool{}
	var g int32
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&g, &id}, func() error { done[[2]int64{int64(g), id}] = true; return nil }); err != nil {
		return nil, interpretError("releasing messages", err)
	}
	out := make([]bool, len(receipts))
	for i, rc := range receipts {
		out[i] = done[[2]int64{int64(rc.GroupNo), rc.ID}]
	}
	return out, nil
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
