package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The cursor design of BenchmarkLeaseDesigns and BenchmarkCursorLive: today's columns and indexes, but a lease
// that writes nothing per message. A message no lease has taken yet is stored with visible_at '-infinity' (so the
// lease index holds the fresh messages of a channel in id order), and a per-channel cursor row records the last id
// leased. A lease advances the cursor past the messages it takes and records them as one range row (its id
// bounds, lease id and visibility deadline): two row operations per lease, whatever its size, where today's table
// updates every leased row — a new version with its content and two new index entries each. An acknowledgement
// deletes its messages, as today, checking that the receipt's range is still held, and deletes the range once no
// message of it is left.
//
// The horizon: ids are drawn from a sequence before commit, so a cursor must not pass an id whose put has not
// ended (that message would stay fresh below the cursor, in no range, never leased). A put takes its transaction
// id before it draws ids (cursorPut); a lease reads the sequence's position before it takes a transaction id (the
// cursor row's lock) and adds the pair to the cursor row's samples; a later lease whose snapshot's xmin is above a
// sample's transaction id knows every put that drew an id up to the sample's position has ended. The horizon is
// the highest such position, and only moves forward (a lease that read the position before another one but took
// the lock after it adds an older sample). The row keeps the samples not yet matured, up to cursorSamples, so that
// the horizon trails the puts by about one commit. The fresh messages above the horizon are leased the
// per-message way (the fallback: today's update, which takes them out of the fresh range), so nothing waits for
// the horizon. The cursor row's lock serializes a channel's leases, and each lease takes it in a statement of its
// own, so that the statement that leases sees what the previous lease (cursor or fallback) committed.
//
// It is a measurement, not a design ferry runs: a sweep for the expired ranges of channels no lease visits,
// changing one message's visibility, statistics, ordered groups, delayed messages and several channels at once
// are left out (docs/benchmarks.md lists what a real one needs).
var cursorSchema = todayTable("bench_cur_messages", true) + `
DROP TABLE IF EXISTS bench_cur_cursors, bench_cur_leases;
DROP SEQUENCE IF EXISTS bench_cur_seq;
CREATE SEQUENCE bench_cur_seq AS bigint;
CREATE TABLE bench_cur_cursors (
	queue_no bigint NOT NULL, group_no integer NOT NULL, channel_id text NOT NULL,
	last_id bigint NOT NULL DEFAULT 0, safe_id bigint NOT NULL DEFAULT 0,
	sample_ids bigint[] NOT NULL DEFAULT '{}', sample_xids xid8[] NOT NULL DEFAULT '{}',
	PRIMARY KEY (queue_no, group_no, channel_id)
) WITH (fillfactor = 50, ` + designAutovacuum + `);
CREATE TABLE bench_cur_leases (
	queue_no bigint NOT NULL, lease_id bigint NOT NULL, group_no integer NOT NULL, channel_id text NOT NULL,
	from_id bigint NOT NULL, to_id bigint NOT NULL, visible_at timestamptz NOT NULL, lease_owner text,
	PRIMARY KEY (queue_no, lease_id)
) WITH (` + designAutovacuum + `);
CREATE INDEX ON bench_cur_leases (queue_no, visible_at);`

// cursorFill stores $2 fresh messages of queue $1 (the content expression in %s, as the other designs' fill),
// then its cursor.
var cursorFill = []string{
	cursorInsert("%s FROM generate_series(1, $2::int) g"),
	`INSERT INTO bench_cur_cursors (queue_no, group_no, channel_id) VALUES ($1, 0, '')`,
}

// cursorInsert is the INSERT of fresh messages of queue $1 into the cursor design's table, each content the
// expression that source (the rest of the SELECT) gives.
func cursorInsert(source string) string {
	return liveInsert("bench_cur_messages", "'-infinity'", source)
}

// liveInsert is the INSERT of 1 KiB messages of queue $1 into table with visibleAt, each content the expression
// that source (the rest of the SELECT) gives.
func liveInsert(table, visibleAt, source string) string {
	return `INSERT INTO ` + table + ` (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content)
SELECT $1, 0, nextval('bench_cur_seq'), '', ` + visibleAt + `, now() + interval '7 days', 1024, ` + source
}

// cursorPut stores a put's batch ($2, contents) of queue $1 as fresh messages, after taking the transaction's id
// (the horizon's half on the put's side). Queued in one pgx.Batch: one implicit transaction, one round trip.
var cursorPut = []string{
	`SELECT pg_current_xact_id()`,
	cursorInsert("c FROM unnest($2::text[]) c"),
}

// cursorLeaseSteps are the lease's three statements, queued in one pgx.Batch (one implicit transaction, one
// round trip): the sequence's position, read before the transaction has an id; the cursor row's lock, which
// gives it one; the lease (cursorLease), in a snapshot taken once the lock is held.
var cursorLeaseSteps = []string{
	`SELECT set_config('bench.sequence_position', last_value::text, true) FROM bench_cur_seq`,
	`SELECT last_id FROM bench_cur_cursors WHERE queue_no = $1 AND group_no = $2 AND channel_id = $3 FOR UPDATE`,
}

// cursorLease is messages.lease_one's parameters for the cursor design. In the order it leases: the messages
// visible again (a range past its deadline was turned back into per-message state by an earlier lease, or a
// per-message lease expired), the fresh messages up to the horizon (the cursor), the fresh ones above it (the
// fallback). It answers each leased message's group, id, content and delivery count, and whether the cursor took
// it. Each lease first turns the ranges of its channel past their deadline back into per-message state (visible
// now, delivered once), for the leases after it.
var cursorLease = `
WITH samples AS (
	SELECT s.id, s.xid, s.k, s.xid < pg_snapshot_xmin(pg_current_snapshot()) AS matured
	FROM bench_cur_cursors c, unnest(c.sample_ids, c.sample_xids) WITH ORDINALITY AS s(id, xid, k)
	WHERE c.queue_no = $1 AND c.group_no = $2 AND c.channel_id = ($4::text[])[1]
), cur AS (
	SELECT c.last_id, greatest(c.safe_id, (SELECT max(s.id) FROM samples s WHERE s.matured)) AS safe_id,
		ARRAY (SELECT s.id FROM samples s WHERE NOT s.matured ORDER BY s.k) AS pending_ids,
		ARRAY (SELECT s.xid FROM samples s WHERE NOT s.matured ORDER BY s.k) AS pending_xids
	FROM bench_cur_cursors c
	WHERE c.queue_no = $1 AND c.group_no = $2 AND c.channel_id = ($4::text[])[1]
), expired AS (
	DELETE FROM bench_cur_leases l
	WHERE l.queue_no = $1 AND l.visible_at <= now() AND l.group_no = $2 AND l.channel_id = ($4::text[])[1]
	RETURNING l.from_id, l.to_id
), revived AS (
	UPDATE bench_cur_messages m SET visible_at = now(), delivery_count = 1, lease_id = 0
	FROM expired e
	WHERE m.queue_no = $1 AND m.group_no = $2 AND NOT m.dlq AND m.channel_id = ($4::text[])[1]
		AND m.visible_at = '-infinity' AND m.id BETWEEN e.from_id AND e.to_id
), due AS (
	SELECT ctid FROM bench_cur_messages m
	WHERE m.queue_no = $1 AND m.group_no = $2 AND m.dlq = $3 AND m.channel_id = ($4::text[])[1]
		AND m.visible_at > '-infinity' AND m.visible_at <= now() AND m.expire_at > now()
	ORDER BY m.visible_at, m.id
	LIMIT $5
	FOR UPDATE SKIP LOCKED
), picked AS (
	SELECT m.group_no, m.id, m.content
	FROM bench_cur_messages m
	WHERE m.queue_no = $1 AND m.group_no = $2 AND m.dlq = $3 AND m.channel_id = ($4::text[])[1]
		AND m.visible_at = '-infinity' AND m.id > (SELECT last_id FROM cur) AND m.id <= (SELECT safe_id FROM cur)
		AND m.expire_at > now() AND $6 >= 0
	ORDER BY m.id
	LIMIT (SELECT $5 - count(*) FROM due)
), beyond AS (
	SELECT ctid FROM bench_cur_messages m
	WHERE m.queue_no = $1 AND m.group_no = $2 AND m.dlq = $3 AND m.channel_id = ($4::text[])[1]
		AND m.visible_at = '-infinity' AND m.id > (SELECT safe_id FROM cur) AND m.expire_at > now()
	ORDER BY m.id
	LIMIT (SELECT $5 - (SELECT count(*) FROM due) - count(*) FROM picked)
	FOR UPDATE
), fallback AS (
	UPDATE bench_cur_messages m SET
		visible_at = now() + make_interval(secs => $7), delivery_count = m.delivery_count + 1, lease_id = $8, lease_owner = $9::text
	WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM due UNION ALL SELECT ctid FROM beyond)) AND m.queue_no = $1
	RETURNING m.group_no, m.id, m.content, m.delivery_count
), advanced AS (
	UPDATE bench_cur_cursors c SET
		last_id = coalesce((SELECT max(id) FROM picked), c.last_id),
		safe_id = (SELECT safe_id FROM cur),
		sample_ids = ((SELECT pending_ids FROM cur) || current_setting('bench.sequence_position')::bigint)[greatest(1, cardinality((SELECT pending_ids FROM cur)) - ` + cursorSamplesSQL + ` + 2):],
		sample_xids = ((SELECT pending_xids FROM cur) || pg_current_xact_id())[greatest(1, cardinality((SELECT pending_xids FROM cur)) - ` + cursorSamplesSQL + ` + 2):]
	WHERE c.queue_no = $1 AND c.group_no = $2 AND c.channel_id = ($4::text[])[1]
), ranged AS (
	INSERT INTO bench_cur_leases (queue_no, lease_id, group_no, channel_id, from_id, to_id, visible_at, lease_owner)
	SELECT $1, $8, $2, ($4::text[])[1], min(id), max(id), now() + make_interval(secs => $7), $9::text
	FROM picked HAVING count(*) > 0
)
SELECT group_no, id, content, 1, true FROM picked
UNION ALL
SELECT group_no, id, content, delivery_count, false FROM fallback`

// cursorAck is messages.delete's parameters and columns for the cursor design: a fresh message is deleted while
// its receipt's range is held (recorded and not past its deadline), a message the fallback leased while it holds
// the receipt's lease (as today), and a range is deleted with its last message. (Two acknowledgements of one range
// in concurrent transactions would each see the other's messages and leave the range behind: the sweeper a real
// design needs would delete it.)
const cursorAck = `
WITH del AS (
	DELETE FROM bench_cur_messages m
	USING unnest($1::int[], $2::bigint[], $3::bigint[], $4::bool[]) AS r(group_no, id, lease_id, dlq)
		LEFT JOIN bench_cur_leases l ON l.queue_no = $5 AND l.lease_id = r.lease_id
	WHERE m.queue_no = $5 AND m.id = r.id AND m.group_no = r.group_no AND m.dlq = r.dlq
		AND CASE WHEN m.visible_at = '-infinity'
			THEN l.group_no = m.group_no AND m.id BETWEEN l.from_id AND l.to_id AND l.visible_at > now()
			ELSE m.lease_id = r.lease_id END
	RETURNING m.group_no, m.id, r.lease_id
), emptied AS (
	DELETE FROM bench_cur_leases l
	WHERE l.queue_no = $5 AND l.lease_id IN (SELECT lease_id FROM del)
		AND NOT EXISTS (SELECT FROM bench_cur_messages m
			WHERE m.queue_no = $5 AND m.group_no = l.group_no AND NOT m.dlq AND m.channel_id = l.channel_id
				AND m.visible_at = '-infinity' AND m.id BETWEEN l.from_id AND l.to_id
				AND m.id <> ALL (ARRAY (SELECT id FROM del)))
)
SELECT group_no, id, false, lease_id FROM del`

// cursorSamples is how many samples of the horizon a cursor row keeps, newest last: the samples not yet matured
// (some put older than them may still be running), and this lease's.
const cursorSamples = 8

// cursorSamplesSQL is cursorSamples in the statement's text.
var cursorSamplesSQL = strconv.Itoa(cursorSamples)

// cursorLeaseIDs numbers the cursor design's leases: its ranges are keyed by lease id, where the other designs
// reuse a worker's.
var cursorLeaseIDs atomic.Int64

// cursorLeased is what one lease of the cursor design took and what became of it.
type cursorLeased struct {
	acked       int // acknowledged (none when the lease was abandoned)
	byCursor    int // taken by the cursor, not the fallback
	redelivered int // delivered before (their delivery count above 1)
}

// leaseAndAckCursor is leaseAndAck for the cursor design: it leases up to 48 messages for visibility seconds and
// acknowledges them, unless abandon (the consumer that never acknowledges, whose messages come back after the
// deadline).
func leaseAndAckCursor(ctx context.Context, n *node, queueNo int64, visibility int32, abandon bool) (cursorLeased, error) {
	var got cursorLeased
	leaseID := cursorLeaseIDs.Add(1)
	batch := &pgx.Batch{}
	batch.Queue(cursorLeaseSteps[0])
	batch.Queue(cursorLeaseSteps[1], queueNo, int32(0), "")
	batch.Queue(cursorLease, queueNo, int32(0), false, []string{""}, int32(48), int32(0), visibility, leaseID, nil)
	results := n.pool.SendBatch(ctx, batch)
	defer results.Close()
	for range 2 {
		if _, err := results.Exec(); err != nil {
			return got, err
		}
	}
	rows, err := results.Query()
	if err != nil {
		return got, err
	}
	var groups []int32
	var ids, leases []int64
	var dlqs []bool
	for rows.Next() {
		var group, deliveries int32
		var id int64
		var content string
		var cursor bool
		if err := rows.Scan(&group, &id, &content, &deliveries, &cursor); err != nil {
			rows.Close()
			return got, err
		}
		if len(content) != 1024 {
			rows.Close()
			return got, fmt.Errorf("leased a message of %d bytes", len(content))
		}
		groups, ids, leases, dlqs = append(groups, group), append(ids, id), append(leases, leaseID), append(dlqs, false)
		if cursor {
			got.byCursor++
		}
		if deliveries > 1 {
			got.redelivered++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return got, err
	}
	if err := results.Close(); err != nil || len(ids) == 0 || abandon {
		return got, err
	}
	tag, err := n.pool.Exec(ctx, cursorAck, groups, ids, leases, dlqs, queueNo)
	if err != nil {
		return got, err
	}
	if int(tag.RowsAffected()) != len(ids) {
		var state string
		_ = n.pool.QueryRow(ctx, `SELECT string_agg(format('%s visible_at %s lease %s', m.id, m.visible_at, m.lease_id), '; ') ||
			'; its range: ' || coalesce((SELECT format('[%s, %s] until %s', from_id, to_id, visible_at) FROM bench_cur_leases WHERE lease_id = $2), 'none')
			FROM bench_cur_messages m WHERE m.id = ANY ($1)`, ids, leaseID).Scan(&state)
		return got, fmt.Errorf("acknowledged %d of %d (%d by the cursor, lease %d): %s", tag.RowsAffected(), len(ids), got.byCursor, leaseID, state)
	}
	got.acked = len(ids)
	return got, nil
}

// BenchmarkCursorLive checks the cursor design's horizon where it matters, with puts committing while leases run:
// cursorLiveProducers connections put batches of 20 fresh 1 KiB messages (cursorLiveMessages in all) while
// designWorkers connections lease 48 at a time and acknowledge them, until every message put was acknowledged —
// a message the cursor passed before its put committed would never be, one leased twice fails its second
// acknowledgement, and the phase fails after a minute. It alternates with today's table and statements (the pk
// design's table, the same indexes) under the same load, for two rounds, and logs each phase's rate, PostgreSQL's
// CPU per message and the share the cursor leased (the rest went through the fallback, above the horizon). A last
// phase checks redelivery: every 50th lease is abandoned with a 2 s deadline, and its messages must come back
// (a range past its deadline turned back into per-message state) and be acknowledged once. Skipped unless
// FERRY_BENCH_CURSOR=1:
//
//	FERRY_BENCH_CURSOR=1 go test -run '^$' -bench CursorLive -benchtime 1x -v ./tests/bench/
func BenchmarkCursorLive(b *testing.B) {
	if os.Getenv("FERRY_BENCH_CURSOR") == "" {
		b.Skip("set FERRY_BENCH_CURSOR=1")
	}
	n := startNode(b)
	ctx := context.Background()
	for _, schema := range designSchemas() {
		if _, err := n.pool.Exec(ctx, schema); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		_, _ = n.pool.Exec(context.Background(), `DROP TABLE IF EXISTS `+strings.Join(designTables, ", ")+`; DROP SEQUENCE IF EXISTS bench_cur_seq`)
	})
	golden, err := os.ReadFile("../../persistence/testdata/statements.golden.sql")
	if err != nil {
		b.Fatal(err)
	}
	today := pkDesign(b, golden) // today's statements on a table like the cursor design's
	var rates [2]float64
	for round := 1; round <= 2; round++ {
		for i, mode := range []liveMode{liveToday, liveCursor} {
			rates[i] += cursorLivePhase(b, n, round, mode, today) / 2
		}
	}
	cursorLivePhase(b, n, 3, liveRedelivery, today)
	fmt.Printf("cursor_live today_msgs_per_s=%.0f cursor_msgs_per_s=%.0f cursor_over_today=%.2f\n", rates[0], rates[1], rates[1]/rates[0])
}

// Settings of BenchmarkCursorLive (environment overrides).
var (
	cursorLiveMessages  = envInt("FERRY_BENCH_CURSOR_MESSAGES", 100_000) / 20 * 20 // whole batches
	cursorLiveProducers = envInt("FERRY_BENCH_CURSOR_PRODUCERS", 2)
)

// liveMode is what a phase of BenchmarkCursorLive runs.
type liveMode string

const (
	liveToday      liveMode = "today"      // today's table and statements
	liveCursor     liveMode = "cursor"     // the cursor design
	liveRedelivery liveMode = "redelivery" // the cursor design, every 50th lease abandoned with a 2 s deadline
)

// cursorLivePhase puts and drains cursorLiveMessages at once in mode, and returns the rate of acknowledgements.
func cursorLivePhase(b *testing.B, n *node, round int, mode liveMode, today *leaseDesign) float64 {
	ctx := context.Background()
	for _, sql := range append(designDeletes(), cursorFill[1],
		`VACUUM ANALYZE bench_cur_messages, bench_cur_leases, bench_cur_cursors, bench_pk_messages`, `CHECKPOINT`) {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, designQueueNo)
		}
		if _, err := n.pool.Exec(ctx, sql, args...); err != nil {
			b.Fatal(err)
		}
	}
	contents := make([]string, 20)
	for i := range contents {
		contents[i] = strings.Repeat(fmt.Sprintf("%x", i%16), 1024)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var put, acked, byCursor, redelivered atomic.Int64
	var failed atomic.Pointer[error] // the first failure (the others follow from its cancel)
	fail := func(err error) { failed.CompareAndSwap(nil, &err); cancel() }
	p0 := n.ownPostgresCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for range cursorLiveProducers {
		wg.Go(func() {
			for ctx.Err() == nil && put.Add(20) <= int64(cursorLiveMessages) {
				var err error
				if mode == liveToday {
					_, err = n.pool.Exec(ctx, liveInsert("bench_pk_messages", "now()", "c FROM unnest($2::text[]) c"), int64(designQueueNo), contents)
				} else {
					batch := &pgx.Batch{}
					batch.Queue(cursorPut[0])
					batch.Queue(cursorPut[1], int64(designQueueNo), contents)
					err = n.pool.SendBatch(ctx, batch).Close()
				}
				if err != nil {
					fail(err)
					return
				}
			}
		})
	}
	for worker := range designWorkers {
		wg.Go(func() {
			for lease := 1; ctx.Err() == nil && acked.Load() < int64(cursorLiveMessages); lease++ {
				var got cursorLeased
				var err error
				switch mode {
				case liveToday:
					got.acked, err = today.leaseAndAck(ctx, n, int64(worker+1))
				case liveCursor:
					got, err = leaseAndAckCursor(ctx, n, designQueueNo, 30, false)
				case liveRedelivery:
					got, err = leaseAndAckCursor(ctx, n, designQueueNo, 2, lease%50 == 0)
				}
				if err != nil {
					fail(err)
					return
				}
				if got.acked == 0 {
					time.Sleep(time.Millisecond)
				}
				acked.Add(int64(got.acked))
				byCursor.Add(int64(got.byCursor))
				redelivered.Add(int64(got.redelivered))
			}
		})
	}
	wg.Wait()
	elapsed, p1 := time.Since(start).Seconds(), n.ownPostgresCPU()
	if err := failed.Load(); err != nil {
		b.Fatalf("round %d, %s: %v after %d acknowledged", round, mode, *err, acked.Load())
	}
	msgs := float64(acked.Load())
	if acked.Load() != int64(cursorLiveMessages) {
		b.Fatalf("round %d, %s: %d of %d messages acknowledged", round, mode, acked.Load(), cursorLiveMessages)
	}
	if mode == liveRedelivery && redelivered.Load() == 0 {
		b.Fatalf("round %d, %s: no abandoned message came back", round, mode)
	}
	var left, ranges int
	if err := n.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM bench_cur_messages) + (SELECT count(*) FROM bench_pk_messages),
		(SELECT count(*) FROM bench_cur_leases)`).Scan(&left, &ranges); err != nil || left != 0 || ranges != 0 {
		b.Fatalf("round %d, %s: %d messages and %d ranges left (%v)", round, mode, left, ranges, err)
	}
	rate, pgMicros := msgs/elapsed, (p1-p0)*1e6/msgs
	b.Logf("round %d: %-10s put and drained %.0f msgs/s; postgres CPU %.0f µs a message; the cursor leased %.0f %%, %d were redelivered",
		round, mode, rate, pgMicros, float64(byCursor.Load())*100/msgs, redelivered.Load())
	return rate
}
