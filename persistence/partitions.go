package persistence

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/fault"
)

// Partitions is the repository of queue-based load balancing (docs/partitions.md): the partitions' messages
// (partition_messages), their offsets (queue_partitions) and each PARTITION group's assignment and committed
// offsets (partition_assignments). Every decision about who owns a partition is made in PostgreSQL, under the
// group's advisory lock (the one single-active-consumer decisions take), so any number of nodes agree.
type Partitions struct {
	pool    *pgxpool.Pool
	nums    *queueNumbers
	commits *coalescer[commitKey, CommitRequest, error] // nil: every commit alone
}

// NewPartitions builds the repository; concurrent commits of a group share a statement (coalesce.go).
func NewPartitions(pool *pgxpool.Pool) *Partitions {
	r := &Partitions{pool: pool, nums: newQueueNumbers(pool)}
	r.commits = newCoalescer(coalescedDurableInFlight, maxCoalescedMessages, func(c CommitRequest) int { return len(c.Partitions) },
		r.commitBatch)
	return r
}

// PartitionState is one partition of a PARTITION group.
type PartitionState struct {
	Partition  int32
	Owner      string // "" = unassigned
	Generation int64  // the group generation at which the owner got it (or it was sought)
	Committed  int64  // the last offset processed; -1 = none
	Latest     int64  // the partition's last offset; -1 = no message yet
	NextOwner  string // a handover in progress: the owner is to release it to NextOwner
}

// Lag is how many messages of the partition the group has not committed.
func (p PartitionState) Lag() int64 { return max(0, p.Latest-p.Committed) }

// SameAssignment reports whether a and b hold the same partitions at the same generations.
func SameAssignment(a, b []PartitionState) bool {
	return slices.EqualFunc(a, b, func(x, y PartitionState) bool {
		return x.Partition == y.Partition && x.Generation == y.Generation
	})
}

// PartitionRecord is a message read from a partition.
type PartitionRecord struct {
	Partition  int32
	Offset     int64
	Generation int64
	ID         int64
	ChannelID  string
	CreatedAt  time.Time
	ExpireAt   time.Time
	Content    string
	Attributes []byte
	Metadata   []byte
}

// FetchRequest is a consumer's call for its partitions' messages.
type FetchRequest struct {
	QueueID        string
	TenancyID      string
	GroupNo        int32
	ConsumerID     string
	PartitionCount int32
	LeaseSeconds   int32         // a consumer that has not called (or committed) for this long is gone
	HandoverGrace  time.Duration // how long a live owner has to release a partition that moves
	Limit          int           // messages at most; 0 = only register and rebalance
	SessionID      string        // a watch's session: renew only its registration (OpenWatch made it), never revive it
}

// Fetched is the answer to a FetchRequest.
type Fetched struct {
	Generation int64            // the group's generation
	Owned      []PartitionState // the caller's partitions, in partition order
	Records    []PartitionRecord
	Rebalanced bool // this call changed the assignment
}

const (
	// The steady state's reads take the group's lock (consumers.lock) shared: they run side by side, and a
	// rebalance (exclusive) waits for them, so a read sees an assignment either before or after it, whole.
	partitionsLockShared = `-- partitions.lock_shared
		SELECT pg_advisory_xact_lock_shared(hashtextextended($1 || '/' || $2::int, 1))`

	// Register or renew a PARTITION group's consumer (a consumer that lapsed or left registers again, at the back).
	// A watch ($6, its session) only renews its own registration: one that was removed (left) stays removed, and
	// its watch closes at its node's next heartbeat.
	// A registration renewed within the last quarter of the lease is not touched (not even locked): a read in the
	// steady state then writes nothing, and commits without waiting for a WAL flush.
	partitionsRegister = `-- partitions.register
		INSERT INTO consumers AS c (queue_id, group_no, consumer_id, registered_at, last_seen, kind, tenancy_id, last_active)
		SELECT $1, $2, $3, clock_timestamp(), now(), 'partition', $4, now()
		WHERE $6::text IS NULL AND NOT EXISTS (SELECT 1 FROM consumers f WHERE f.queue_id = $1 AND f.group_no = $2 AND f.consumer_id = $3
			AND f.kind = 'partition' AND f.left_at IS NULL AND f.last_seen >= now() - make_interval(secs => $5 / 4.0))
		ON CONFLICT (queue_id, group_no, consumer_id) DO UPDATE SET last_seen = now(), last_active = now(),
			kind = 'partition', leaving = false, left_at = NULL,
			registered_at = CASE WHEN c.last_seen < now() - make_interval(secs => $5) OR c.left_at IS NOT NULL
				THEN clock_timestamp() ELSE c.registered_at END,
			-- a consumer that comes back by long poll after its watch ended is no watch
			session_id = CASE WHEN $6::text IS NULL AND (c.last_seen < now() - make_interval(secs => $5) OR c.left_at IS NOT NULL)
				THEN NULL ELSE c.session_id END
		WHERE (c.last_seen < now() - make_interval(secs => $5 / 4.0) OR c.left_at IS NOT NULL OR c.kind <> 'partition')
			AND ($6::text IS NULL OR c.session_id = $6 AND c.left_at IS NULL)`

	// The group's live consumers, in registration order.
	partitionsMembers = `-- partitions.members
		SELECT consumer_id FROM consumers
		WHERE queue_id = $1 AND group_no = $2 AND kind = 'partition' AND left_at IS NULL
			AND last_seen >= now() - make_interval(secs => $3)
		ORDER BY registered_at, consumer_id`

	// The group's partitions (created on first use), with each partition's latest offset; the rows are locked
	// for the rebalance (the group's advisory lock keeps other rebalances out; the row locks, commits).
	partitionsEnsure = `-- partitions.ensure
		INSERT INTO partition_assignments (queue_no, group_no, partition)
		SELECT $1, $2, p FROM generate_series(0, $3 - 1) p
		ON CONFLICT DO NOTHING`
	partitionsAssignment = `-- partitions.assignment
		SELECT a.partition, coalesce(a.owner, ''), a.generation, a.committed, coalesce(a.next_owner, ''),
			coalesce(a.handover_by <= now(), false), coalesce(p.next_offset, 0) - 1
		FROM partition_assignments a
		LEFT JOIN queue_partitions p ON p.queue_no = a.queue_no AND p.partition = a.partition
		WHERE a.queue_no = $1 AND a.group_no = $2 AND a.partition < $3
		ORDER BY a.partition`

	// Apply a rebalance's changes.
	partitionsReassign = `-- partitions.reassign
		UPDATE partition_assignments a SET owner = nullif(c.owner, ''), generation = c.generation,
			next_owner = nullif(c.next_owner, ''),
			handover_by = CASE WHEN c.next_owner <> '' THEN now() + make_interval(secs => $3) END
		FROM unnest($4::int[], $5::text[], $6::bigint[], $7::text[]) AS c(partition, owner, generation, next_owner)
		WHERE a.queue_no = $1 AND a.group_no = $2 AND a.partition = c.partition`

	// Up to $4 messages of the given partitions after the given offsets, taken from the partitions in turn.
	partitionsRead = `-- partitions.read
		` + partitionsReadHead + `unnest($2::int[], $3::bigint[]) AS o(partition, after)` + partitionsReadTail

	// The steady state's read: the caller's partitions as they are assigned now (not being handed over), read
	// in the same implicit transaction as the assignment, under the group's lock. Used when the plan changes
	// nothing.
	partitionsReadOwned = `-- partitions.read_owned
		` + partitionsReadHead + `(SELECT a.partition, a.committed FROM partition_assignments a
				WHERE a.queue_no = $1 AND a.group_no = $2 AND a.owner = $3 AND a.next_owner IS NULL AND a.partition < $5
			) AS o(partition, after)` + partitionsReadTail

	// The read of both: up to $4 messages of queue $1's partitions o(partition, after), after each one's offset.
	partitionsReadHead = `SELECT m.partition, m.log_offset, m.id, m.channel_id, m.created_at, m.expire_at, m.content, m.attributes, m.metadata
		FROM (
			SELECT m.*, row_number() OVER (PARTITION BY m.partition ORDER BY m.log_offset) AS turn
			FROM `
	partitionsReadTail = `
			CROSS JOIN LATERAL (
				SELECT * FROM partition_messages m
				WHERE m.queue_no = $1 AND m.partition = o.partition AND m.log_offset > o.after AND m.expire_at > now()
				ORDER BY m.log_offset LIMIT $4) m
		) m
		ORDER BY m.turn, m.partition LIMIT $4`

	// Commits of a group's consumers, in one statement for several requests (coalesced): the partitions' rows are
	// locked (a rebalance waits, or has committed and is seen); each request's offsets are checked against their
	// partitions' latest offsets and the caller's ownership at the given generation (fencing), and a request's
	// offsets are written only when every one of them passes (all or nothing per request; of two requests for one
	// partition, the later one's offset stands). It answers each offset's check, in input order.
	partitionsCommit = `-- partitions.commit
		WITH input AS (
			SELECT * FROM unnest($3::int[], $4::text[], $5::int[], $6::bigint[], $7::bigint[])
				WITH ORDINALITY AS c(req, consumer, partition, committed, generation, ord)
		), cur AS (
			SELECT a.partition, a.owner, a.generation FROM partition_assignments a
			WHERE a.queue_no = $1 AND a.group_no = $2 AND a.partition = ANY ($5)
			FOR UPDATE
		), checked AS (
			SELECT i.ord, i.req, i.partition, i.committed, coalesce(p.next_offset, 0) - 1 AS latest,
				coalesce(cur.owner = i.consumer AND cur.generation = i.generation, false) AS owned
			FROM input i
			LEFT JOIN cur ON cur.partition = i.partition
			LEFT JOIN queue_partitions p ON p.queue_no = $1 AND p.partition = i.partition
		), refused AS (
			SELECT DISTINCT req FROM checked WHERE NOT owned OR committed > latest
		), accepted AS (
			SELECT DISTINCT ON (partition) partition, committed FROM checked
			WHERE req NOT IN (SELECT req FROM refused)
			ORDER BY partition, ord DESC
		), written AS (
			UPDATE partition_assignments a SET committed = c.committed, time_committed = now()
			FROM accepted c
			WHERE a.queue_no = $1 AND a.group_no = $2 AND a.partition = c.partition
			RETURNING 1
		)
		SELECT c.req, c.partition, c.latest, c.owned, (SELECT count(*) FROM written) FROM checked c ORDER BY c.ord`
	partitionsHeartbeat = `-- partitions.heartbeat
		UPDATE consumers SET last_seen = now(), last_active = now()
		WHERE queue_id = $1 AND group_no = $2 AND consumer_id = ANY ($3) AND kind = 'partition' AND left_at IS NULL
			AND last_seen >= now() - make_interval(secs => $4) AND last_seen < now() - make_interval(secs => $4 / 4.0)`

	// Seek: the next read of each partition starts at offset $5 (NULL: at the first message created at or after
	// $6); every sought partition gets generation $7, which fences commits of what was read before.
	partitionsSeek = `-- partitions.seek
		UPDATE partition_assignments a SET generation = $7, committed = CASE
				WHEN $5::bigint IS NOT NULL THEN least($5, ` + partitionNextOffset + `) - 1
				ELSE coalesce((SELECT min(m.log_offset) FROM partition_messages m
					WHERE m.queue_no = a.queue_no AND m.partition = a.partition AND m.created_at >= $6),
					` + partitionNextOffset + `) - 1 END
		WHERE a.queue_no = $1 AND a.group_no = $2 AND a.partition < $3 AND ($4::int[] IS NULL OR a.partition = ANY ($4))`
	partitionNextOffset = `coalesce((SELECT p.next_offset FROM queue_partitions p
		WHERE p.queue_no = a.queue_no AND p.partition = a.partition), 0)`

	// A consumer leaves: it gives up its partitions (and the handovers to it) at once.
	partitionsRelease = `-- partitions.release
		UPDATE partition_assignments SET
			owner = CASE WHEN owner = $3 THEN NULL ELSE owner END,
			next_owner = NULL, handover_by = NULL
		WHERE queue_no = $1 AND group_no = $2 AND (owner = $3 OR next_owner = $3)`

	// Every partition of a group (also those no consumer has asked for yet), for stats and consumer lists.
	partitionsStates = `-- partitions.states
		SELECT s.p, coalesce(a.owner, ''), coalesce(a.generation, 0), coalesce(a.committed, -1),
			coalesce(p.next_offset, 0) - 1, coalesce(a.next_owner, '')
		FROM generate_series(0, $3 - 1) AS s(p)
		LEFT JOIN partition_assignments a ON a.queue_no = $1 AND a.group_no = $2 AND a.partition = s.p
		LEFT JOIN queue_partitions p ON p.queue_no = $1 AND p.partition = s.p
		ORDER BY s.p`

	// Retention: partition messages past their expiry (rows are never updated, so a ctid stays valid), then
	// whatever deleted queues and groups left behind.
	partitionsExpire = `-- partitions.expire
		DELETE FROM partition_messages WHERE ctid = ANY (ARRAY (
			SELECT ctid FROM partition_messages WHERE expire_at <= now() LIMIT $1))`
	partitionsDropDeleted = `-- partitions.drop_deleted
		WITH gone_queues AS (
			SELECT no FROM queues WHERE lifecycle_state = 'DELETED' AND partition_count IS NOT NULL
		), msgs AS (
			DELETE FROM partition_messages WHERE ctid = ANY (ARRAY (
				SELECT ctid FROM partition_messages WHERE queue_no IN (SELECT no FROM gone_queues) LIMIT $1))
			RETURNING 1
		), counters AS (
			DELETE FROM queue_partitions WHERE queue_no IN (SELECT no FROM gone_queues)
				AND NOT EXISTS (SELECT 1 FROM partition_messages m WHERE m.queue_no = queue_partitions.queue_no)
			RETURNING 1
		), groups AS (
			DELETE FROM partition_assignments a USING queues q, consumer_groups g
			WHERE q.no = a.queue_no AND g.queue_id = q.id AND g.group_no = a.group_no AND g.lifecycle_state = 'DELETED'
			RETURNING 1
		)
		SELECT (SELECT count(*) FROM msgs) + (SELECT count(*) FROM counters) + (SELECT count(*) FROM groups)`
)

// StaleGenerationError refuses a commit for partitions the caller no longer owns at the generation it gave.
type StaleGenerationError struct {
	Partitions []int32
}

func (e *StaleGenerationError) Error() string {
	parts := make([]string, len(e.Partitions))
	for i, p := range e.Partitions {
		parts[i] = fmt.Sprint(p)
	}
	return "the caller does not own partition(s) " + strings.Join(parts, ", ") +
		" at the given generation (reassigned or sought since it read them): nothing was committed; read again"
}

// Fetch registers (or renews) the caller, rebalances the group when its live consumers changed, and reads the
// caller's partitions after their committed offsets, in one transaction under the group's lock.
func (r *Partitions) Fetch(ctx context.Context, req FetchRequest) (Fetched, error) {
	no, err := r.nums.of(ctx, req.QueueID)
	if err != nil {
		return Fetched{}, err
	}
	if out, ok, err := r.fetchSteady(ctx, no, req); err != nil || ok {
		return out, interpretError("reading partitions", err)
	}
	var out Fetched
	err = InTx(ctx, r.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		batch.Queue(consumersLock, req.QueueID, req.GroupNo)
		batch.Queue(partitionsRegister, req.QueueID, req.GroupNo, req.ConsumerID, req.TenancyID, req.LeaseSeconds, nilIfEmpty(req.SessionID))
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		states, rebalanced, err := r.rebalance(ctx, tx, no, req.QueueID, req.GroupNo, req.PartitionCount, req.LeaseSeconds,
			req.HandoverGrace, req.ConsumerID)
		if err != nil {
			return err
		}
		out.Rebalanced = rebalanced
		gens := out.own(states, req.ConsumerID)
		if len(out.Owned) == 0 || req.Limit <= 0 {
			return nil
		}
		parts, after := make([]int32, len(out.Owned)), make([]int64, len(out.Owned))
		for i, s := range out.Owned {
			parts[i], after[i] = s.Partition, s.Committed
		}
		rows, err := tx.Query(ctx, partitionsRead, no, parts, after, req.Limit)
		if err != nil {
			return err
		}
		out.Records, err = collectRecords(rows, gens)
		return err
	})
	return out, interpretError("reading partitions", err)
}

// fetchSteady is Fetch in one round trip (one implicit transaction, under the group's lock, shared) for the common case:
// the caller's registration, the group's assignment and the caller's messages as assigned now. ok is false when
// the assignment must change (the caller then runs the full transaction).
func (r *Partitions) fetchSteady(ctx context.Context, queueNo int64, req FetchRequest) (Fetched, bool, error) {
	var members []string
	var states []PartitionState
	var overdue []bool
	var records []PartitionRecord
	batch := &pgx.Batch{}
	batch.Queue(partitionsLockShared, req.QueueID, req.GroupNo)
	batch.Queue(partitionsRegister, req.QueueID, req.GroupNo, req.ConsumerID, req.TenancyID, req.LeaseSeconds, nilIfEmpty(req.SessionID))
	queueAssignment(batch, queueNo, req.QueueID, req.GroupNo, req.PartitionCount, req.LeaseSeconds, &members, &states, &overdue)
	limit := max(req.Limit, 1)
	batch.Queue(partitionsReadOwned, queueNo, req.GroupNo, req.ConsumerID, limit, req.PartitionCount).Query(func(rows pgx.Rows) error {
		var err error
		records, err = collectRecords(rows, nil)
		return err
	})
	if err := r.pool.SendBatch(ctx, batch).Close(); err != nil {
		return Fetched{}, false, err
	}
	if len(states) < int(req.PartitionCount) || len(planAssignment(states, overdue, members, req.ConsumerID)) > 0 {
		return Fetched{}, false, nil
	}
	var out Fetched
	gens := out.own(states, req.ConsumerID)
	if req.Limit > 0 {
		for i := range records {
			records[i].Generation = gens[records[i].Partition]
		}
		out.Records = records
	}
	return out, true, nil
}

// own sets the answer's generation (the group's highest) and the caller's partitions from the group's states,
// and returns the generation of each of the caller's partitions.
func (out *Fetched) own(states []PartitionState, consumerID string) map[int32]int64 {
	gens := map[int32]int64{}
	for _, s := range states {
		out.Generation = max(out.Generation, s.Generation)
		if s.Owner == consumerID {
			out.Owned = append(out.Owned, s)
			gens[s.Partition] = s.Generation
		}
	}
	return gens
}

// collectRecords reads partition messages (partitionsRead's columns), each with its partition's generation, in
// partition and offset order.
func collectRecords(rows pgx.Rows, gens map[int32]int64) ([]PartitionRecord, error) {
	records, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (PartitionRecord, error) {
		var m PartitionRecord
		var attrs, meta *string
		err := row.Scan(&m.Partition, &m.Offset, &m.ID, &m.ChannelID, &m.CreatedAt, &m.ExpireAt, &m.Content, &attrs, &meta)
		m.CreatedAt, m.ExpireAt, m.Generation = m.CreatedAt.UTC(), m.ExpireAt.UTC(), gens[m.Partition]
		if attrs != nil {
			m.Attributes = []byte(*attrs)
		}
		if meta != nil {
			m.Metadata = []byte(*meta)
		}
		return m, err
	})
	slices.SortFunc(records, func(a, b PartitionRecord) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return records, err
}

// queueAssignment adds to batch the reads of a group's live consumers and of its partitions' assignment.
func queueAssignment(batch *pgx.Batch, queueNo int64, queueID string, groupNo, partitionCount, leaseSeconds int32,
	members *[]string, states *[]PartitionState, overdue *[]bool) {
	*members, *states, *overdue = nil, nil, nil
	batch.Queue(partitionsMembers, queueID, groupNo, leaseSeconds).Query(func(rows pgx.Rows) error {
		var err error
		*members, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	batch.Queue(partitionsAssignment, queueNo, groupNo, partitionCount).Query(func(rows pgx.Rows) error {
		var s PartitionState
		var late bool
		_, err := pgx.ForEachRow(rows, []any{&s.Partition, &s.Owner, &s.Generation, &s.Committed, &s.NextOwner, &late, &s.Latest},
			func() error {
				*states, *overdue = append(*states, s), append(*overdue, late)
				return nil
			})
		return err
	})
}

// rebalance reads the group's assignment and live consumers (the caller holds the group's lock) and applies the
// assignment plan when it changes anything. It returns every partition's state after the change.
func (r *Partitions) rebalance(ctx context.Context, tx pgx.Tx, queueNo int64, queueID string, groupNo, partitionCount,
	leaseSeconds int32, grace time.Duration, caller string) ([]PartitionState, bool, error) {
	var members []string
	var states []PartitionState
	var overdue []bool
	read := func() error {
		batch := &pgx.Batch{}
		queueAssignment(batch, queueNo, queueID, groupNo, partitionCount, leaseSeconds, &members, &states, &overdue)
		return tx.SendBatch(ctx, batch).Close()
	}
	if err := read(); err != nil {
		return nil, false, err
	}
	if len(states) < int(partitionCount) {
		if _, err := tx.Exec(ctx, partitionsEnsure, queueNo, groupNo, partitionCount); err != nil {
			return nil, false, err
		}
		if err := read(); err != nil {
			return nil, false, err
		}
	}
	changes := planAssignment(states, overdue, members, caller)
	if len(changes) == 0 {
		return states, false, nil
	}
	parts, owners, gens, nexts := make([]int32, len(changes)), make([]string, len(changes)), make([]int64, len(changes)), make([]string, len(changes))
	for i, c := range changes {
		parts[i], owners[i], gens[i], nexts[i] = c.Partition, c.Owner, c.Generation, c.NextOwner
		states[c.Partition].Owner, states[c.Partition].Generation, states[c.Partition].NextOwner = c.Owner, c.Generation, c.NextOwner
	}
	_, err := tx.Exec(ctx, partitionsReassign, queueNo, groupNo, grace.Seconds(), parts, owners, gens, nexts)
	return states, true, err
}

// CommitRequest is one consumer's commit.
type CommitRequest struct {
	ConsumerID   string
	LeaseSeconds int32
	Partitions   []int32
	Offsets      []int64
	Generations  []int64
}

type commitKey struct {
	queueNo int64
	queueID string
	groupNo int32
}

// Commit records the offsets the caller processed, all or none: a partition it does not own at the given
// generation refuses the whole commit (*StaleGenerationError), an offset past a partition's latest is
// InvalidParameter. It renews the caller's consumer lease. Concurrent commits of a group run as one statement (one
// WAL flush for all of them), as acknowledgements of a queue do.
func (r *Partitions) Commit(ctx context.Context, queueID string, groupNo int32, req CommitRequest) error {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return err
	}
	key := commitKey{queueNo: no, queueID: queueID, groupNo: groupNo}
	var verdict error
	if r.commits != nil {
		verdict, err = r.commits.do(ctx, key, req)
	} else {
		var verdicts []error
		verdicts, err = r.commitBatch(ctx, key, []CommitRequest{req})
		if err == nil {
			verdict = verdicts[0]
		}
	}
	if err != nil {
		return interpretError("committing offsets", err)
	}
	return verdict
}

// commitBatch runs the commits of several requests (partitionsCommit) and returns each one's verdict.
func (r *Partitions) commitBatch(ctx context.Context, key commitKey, reqs []CommitRequest) ([]error, error) {
	var reqNos, parts []int32
	var consumers []string
	var offsets, generations []int64
	ids := make([]string, 0, len(reqs))
	lease := int32(0)
	for i, q := range reqs {
		for k := range q.Partitions {
			reqNos, consumers = append(reqNos, int32(i)), append(consumers, q.ConsumerID)
			parts, offsets, generations = append(parts, q.Partitions[k]), append(offsets, q.Offsets[k]), append(generations, q.Generations[k])
		}
		ids, lease = append(ids, q.ConsumerID), max(lease, q.LeaseSeconds)
	}
	verdicts := make([]error, len(reqs))
	stale := make([]*StaleGenerationError, len(reqs))
	index := make([]int, len(reqs)) // the offset's index within its request
	batch := &pgx.Batch{}
	batch.Queue(partitionsCommit, key.queueNo, key.groupNo, reqNos, consumers, parts, offsets, generations).Query(func(rows pgx.Rows) error {
		var req, p int32
		var latest, written int64
		var owned bool
		_, err := pgx.ForEachRow(rows, []any{&req, &p, &latest, &owned, &written}, func() error {
			i := index[req]
			index[req]++
			switch {
			case reqs[req].Offsets[i] > latest && verdicts[req] == nil:
				verdicts[req] = fault.InvalidParameter("offsets[%d].offset: partition %d's latest offset is %d", i, p, latest)
			case !owned:
				if stale[req] == nil {
					stale[req] = &StaleGenerationError{}
				}
				stale[req].Partitions = append(stale[req].Partitions, p)
			}
			return nil
		})
		return err
	})
	batch.Queue(partitionsHeartbeat, key.queueID, key.groupNo, ids, lease)
	if err := r.pool.SendBatch(ctx, batch).Close(); err != nil {
		return nil, err
	}
	for i := range verdicts {
		if verdicts[i] == nil && stale[i] != nil {
			verdicts[i] = stale[i]
		}
	}
	return verdicts, nil
}

// Seek moves the committed offsets of a group's partitions (nil = all) so that the next read starts at offset
// (or, with offset nil, at the first message created at or after at), under a new generation. It returns every
// partition's state after the move.
func (r *Partitions) Seek(ctx context.Context, queueID string, groupNo, partitionCount int32, partitions []int32,
	offset *int64, at time.Time) ([]PartitionState, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var states []PartitionState
	err = InTx(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, consumersLock, queueID, groupNo); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, partitionsEnsure, no, groupNo, partitionCount); err != nil {
			return err
		}
		var generation int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(generation), 0) + 1 FROM partition_assignments
			WHERE queue_no = $1 AND group_no = $2`, no, groupNo).Scan(&generation); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, partitionsSeek, no, groupNo, partitionCount, partitions, offset, at, generation); err != nil {
			return err
		}
		var err error
		states, err = r.states(ctx, tx, no, groupNo, partitionCount)
		return err
	})
	return states, interpretError("seeking partitions", err)
}

// Release gives up a consumer's partitions at once (it left) and hands them to the group's other live consumers,
// so that they read them at their next call without another round of rebalancing.
func (r *Partitions) Release(ctx context.Context, queueID string, groupNo, partitionCount, leaseSeconds int32, consumerID string) error {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	err = InTx(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, consumersLock, queueID, groupNo); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, partitionsRelease, no, groupNo, consumerID); err != nil {
			return err
		}
		_, _, err := r.rebalance(ctx, tx, no, queueID, groupNo, partitionCount, leaseSeconds, 0, "")
		return err
	})
	return interpretError("releasing partitions", err)
}

// States returns every partition of a PARTITION group, with its owner, offsets and lag.
func (r *Partitions) States(ctx context.Context, queueID string, groupNo, partitionCount int32) ([]PartitionState, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	states, err := r.states(ctx, r.pool, no, groupNo, partitionCount)
	return states, interpretError("reading partitions", err)
}

func (r *Partitions) states(ctx context.Context, q querier, queueNo int64, groupNo, partitionCount int32) ([]PartitionState, error) {
	rows, err := q.Query(ctx, partitionsStates, queueNo, groupNo, partitionCount)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (PartitionState, error) {
		var s PartitionState
		err := row.Scan(&s.Partition, &s.Owner, &s.Generation, &s.Committed, &s.Latest, &s.NextOwner)
		return s, err
	})
}

// Expire deletes up to batch partition messages past their retention, and what deleted queues and groups left
// behind; it returns how many rows went.
func (r *Partitions) Expire(ctx context.Context, batch int) (int64, error) {
	tag, err := r.pool.Exec(ctx, partitionsExpire, batch)
	if err != nil {
		return 0, interpretError("expiring partition messages", err)
	}
	var dropped int64
	err = r.pool.QueryRow(ctx, partitionsDropDeleted, batch).Scan(&dropped)
	return tag.RowsAffected() + dropped, interpretError("dropping partitions of deleted queues", err)
}
