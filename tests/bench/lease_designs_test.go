package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkLeaseDesigns measures PostgreSQL alone — no ferry, no HTTP in the path — draining the same backlog
// (FERRY_BENCH_DRAIN_MESSAGES, default 100,000 messages of 1 KiB, random hex) with FERRY_BENCH_DESIGN_WORKERS
// (default 4) connections, each leasing 48 at a time (one statement, its own commit) and then acknowledging them
// (another), under the table designs below, alternated for two rounds, each round starting settled (VACUUM ANALYZE,
// CHECKPOINT):
//
//   - today: ferry's messages table and its own statements, read from persistence/testdata/statements.golden.sql
//     (messages.lease_one, messages.delete), so that the figures follow the statements as they change;
//   - bodies: the same table and statements, each message's content kept apart in message_bodies (as for a
//     message fanned out to several groups today), acknowledged with messages.delete then messages.delete_bodies;
//   - hot: a narrow delivery-state table whose lease index leaves visible_at out, and whose pages keep room for
//     the leased versions (fillfactor 50): a lease changes no indexed column, so PostgreSQL updates the row in
//     place (a HOT update: no new index entries, the WAL record carries only the changed bytes); contents apart.
//     The price, which is why ferry does not run it: a lease reads past the leased rows, in flight or not (it
//     filters visible_at in the heap), and waiting ordered messages and delayed ones would be read past too;
//   - segments: a put's batch of 20 messages as one row, leased and acknowledged a segment at a time
//     (lease_segments_test.go);
//   - cursor: today's columns and indexes, and a lease that moves a cursor and records a range row instead of
//     updating every leased row (lease_cursor_test.go);
//   - pk and nopkey (only when FERRY_BENCH_DESIGNS names them): today's columns, indexes and statements on a table of
//     their own, with and without the primary key (queue_no, id, group_no). Every version a lease writes adds an
//     entry to each index of the table, so without the key a lease adds one instead of two; nopkey acknowledges by
//     the lease index's key instead (the leased version's channel and visible_at, which a receipt would have to
//     carry), which is what a table without the key would have to do.
//
// FERRY_BENCH_DESIGN_IDLE (default 0) stores that many messages of another queue beside the drains, as a shared
// service's table holds. It logs each phase's rate, PostgreSQL's CPU per message (all its processes: backends, WAL writer, autovacuum,
// checkpointer), the WAL bytes and full-page images per message, and the share of leases that were HOT updates,
// and ends with
//
//	lease_designs today_msgs_per_s=… bodies_msgs_per_s=… hot_msgs_per_s=… segments_msgs_per_s=… cursor_msgs_per_s=… bodies_over_today=… … today_pg_us_per_msg=… …
//
// It is the measurement behind docs/benchmarks.md's "Where consumption spends its time".
func BenchmarkLeaseDesigns(b *testing.B) {
	n := startNode(b)
	ctx := context.Background()
	golden, err := os.ReadFile("../../persistence/testdata/statements.golden.sql")
	if err != nil {
		b.Fatal(err)
	}
	lease, ack, ackParams := goldenStatement(b, golden, "messages.lease_one"), goldenStatement(b, golden, "messages.delete"),
		goldenParams(b, golden, "messages.delete")
	designs := []*leaseDesign{
		{name: "today", lease: lease, ack: ack, ackParams: ackParams},
		{name: "bodies", apart: true, lease: lease, ack: ack, ackParams: ackParams,
			ackBodies: goldenStatement(b, golden, "messages.delete_bodies")},
		{name: "hot", tab: "bench_hot_messages", apart: true, hot: true, lease: hotLease, ack: hotAck, ackBodies: hotAckBodies},
		{name: "segments", tab: "bench_seg_messages", segments: true},
		{name: "cursor", tab: "bench_cur_messages", cursor: true},
	}
	only := os.Getenv("FERRY_BENCH_DESIGNS") // a comma-separated subset, to look at one design
	named := func(name string) bool { return strings.Contains(","+only+",", ","+name+",") }
	if named("pk") || named("nopkey") {
		nopk := onTable("bench_nopk_messages")
		designs = append(designs, pkDesign(b, golden),
			&leaseDesign{name: "nopkey", tab: "bench_nopk_messages", lease: nopk.Replace(goldenStatement(b, golden, "messages.lease_one")),
				ack: noKeyAck, ackByLeaseKey: true})
	}
	if only != "" {
		var chosen []*leaseDesign
		for _, d := range designs {
			if named(d.name) {
				chosen = append(chosen, d)
			}
		}
		designs = chosen
	}
	for _, schema := range designSchemas() {
		if _, err := n.pool.Exec(ctx, schema); err != nil {
			b.Fatal(err)
		}
	}
	if designIdle > 0 { // other queues' messages, stored and left alone: autovacuum's work grows with them
		if _, err := n.pool.Exec(ctx, `INSERT INTO messages (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content)
			SELECT $1, 0, g, '', now(), now() + interval '7 days', 1024, repeat(md5(g::text), 32) FROM generate_series(1, $2::int) g`,
			designQueueNo-1, designIdle); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_, _ = n.pool.Exec(context.Background(), `DELETE FROM messages WHERE queue_no = $1`, designQueueNo-1)
		})
		b.Logf("%d messages of another queue stored beside the drains", designIdle)
	}
	b.Cleanup(func() {
		_, _ = n.pool.Exec(context.Background(), `DROP TABLE IF EXISTS `+strings.Join(designTables, ", ")+`; DROP SEQUENCE IF EXISTS bench_cur_seq`)
	})
	for round := 1; round <= 2; round++ {
		for _, d := range designs {
			d.drain(b, n, round)
		}
	}
	var line strings.Builder
	line.WriteString("lease_designs")
	for _, d := range designs {
		fmt.Fprintf(&line, " %s_msgs_per_s=%.0f", d.name, d.rate/2)
	}
	for _, d := range designs[1:] {
		if designs[0].name == "today" {
			fmt.Fprintf(&line, " %s_over_today=%.2f", d.name, d.rate/designs[0].rate)
		}
	}
	for _, d := range designs {
		fmt.Fprintf(&line, " %s_pg_us_per_msg=%.0f", d.name, d.pgMicros/2)
	}
	fmt.Println(line.String())
}

// designQueueNo is the queue number the benchmark's messages use in ferry's tables: no queue has it.
const designQueueNo = -1

// leaseDesign is a table design and its lease and acknowledgement statements. today's and bodies' statements are
// ferry's (positional parameters as in statements.golden.sql); hot's take the same parameters.
type leaseDesign struct {
	name           string
	apart, hot     bool     // contents in message_bodies; the narrow table
	segments       bool     // the segments design (lease_segments_test.go)
	cursor         bool     // the cursor design (lease_cursor_test.go)
	tab            string   // its delivery-state table ("" = ferry's messages)
	ackByLeaseKey  bool     // ack's $6 and $7 are the leased versions' channels and visible_at
	ackParams      []string // a golden ack's parameters by name, in $k order (else $1–$5: group_nos, ids, lease_ids, dlqs, queue_no)
	lease, ack     string
	ackBodies      string
	rate, pgMicros float64 // sums over the rounds
}

// designTables is the designs' own tables (besides ferry's messages and message_bodies, which today and bodies use).
var designTables = []string{"bench_hot_messages", "bench_hot_bodies", "bench_seg_messages", "bench_pk_messages", "bench_nopk_messages",
	"bench_cur_messages", "bench_cur_cursors", "bench_cur_leases"}

// designSchemas is the SQL that makes the designs' own tables (designTables).
func designSchemas() []string { return []string{hotSchema, segmentSchema, keySchema, cursorSchema} }

// designDeletes is the statements that delete the benchmark's messages ($1: designQueueNo) from ferry's message
// tables and the designs' own.
func designDeletes() []string {
	var statements []string
	for _, t := range append([]string{"messages", "message_bodies"}, designTables...) {
		statements = append(statements, `DELETE FROM `+t+` WHERE queue_no = $1`)
	}
	return statements
}

// designAutovacuum is the autovacuum settings of ferry's message tables (their partitions'), for the designs' own
// tables.
const designAutovacuum = `autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
	autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0`

// hotSchema is the narrow delivery-state table of the hot design: ferry's columns but the content, with the lease
// index of today's table without visible_at; and a table of contents like message_bodies (ferry's maintainer
// deletes the rows of message_bodies that no message row refers to).
const hotSchema = `
DROP TABLE IF EXISTS bench_hot_messages;
CREATE TABLE bench_hot_messages (
	queue_no bigint NOT NULL, group_no integer NOT NULL DEFAULT 0, id bigint NOT NULL,
	channel_id text NOT NULL DEFAULT '', visible_at timestamptz NOT NULL, expire_at timestamptz NOT NULL,
	delivery_count integer NOT NULL DEFAULT 0, lease_id bigint NOT NULL DEFAULT 0, dlq boolean NOT NULL DEFAULT false,
	size_bytes integer NOT NULL, lease_owner text, time_created timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (queue_no, id, group_no)
) WITH (fillfactor = 50, ` + designAutovacuum + `);
CREATE INDEX bench_hot_messages_lease ON bench_hot_messages (queue_no, group_no, dlq, channel_id, id);
DROP TABLE IF EXISTS bench_hot_bodies;
CREATE TABLE bench_hot_bodies (LIKE message_bodies INCLUDING ALL);`

// hotLease is messages.lease_one on the narrow table, in id order (visible_at is not in the index).
const hotLease = `
WITH next AS (
	SELECT ctid, group_no, id FROM bench_hot_messages
	WHERE queue_no = $1 AND group_no = $2 AND dlq = $3 AND channel_id = ($4::text[])[1]
		AND visible_at <= now() AND expire_at > now()
	ORDER BY id
	LIMIT $5
	FOR UPDATE SKIP LOCKED
), leased AS (
	UPDATE bench_hot_messages m SET
		visible_at = now() + make_interval(secs => $7),
		delivery_count = m.delivery_count + 1,
		lease_id = $8,
		lease_owner = $9
	FROM next
	WHERE m.ctid = ANY (ARRAY (SELECT ctid FROM next)) AND m.ctid = next.ctid AND m.queue_no = $1 AND $6 >= 0
	RETURNING m.group_no, m.id, m.channel_id, m.visible_at, m.expire_at, m.delivery_count, m.time_created
)
SELECT l.group_no, l.id, l.channel_id, l.visible_at, l.expire_at, l.delivery_count, b.content, b.attributes,
	b.metadata, l.time_created
FROM leased l JOIN bench_hot_bodies b ON b.queue_no = $1 AND b.id = l.id`

const (
	hotAck = `
DELETE FROM bench_hot_messages m USING unnest($1::int[], $2::bigint[], $3::bigint[], $4::bool[]) AS r(group_no, id, lease_id, dlq)
WHERE m.queue_no = $5 AND m.id = r.id AND m.group_no = r.group_no AND m.lease_id = r.lease_id AND m.dlq = r.dlq
RETURNING m.group_no, m.id, false, m.lease_id`
	hotAckBodies = `DELETE FROM bench_hot_bodies b WHERE b.queue_no = $1 AND b.id = ANY ($2::bigint[])`
)

// todayTable is the SQL that makes tab a table of today's columns, storage and indexes (not partitioned), with or
// without the primary key (queue_no, id, group_no).
func todayTable(tab string, primaryKey bool) string {
	sql := `
DROP TABLE IF EXISTS ` + tab + `;
CREATE TABLE ` + tab + ` (LIKE messages INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
	WITH (fillfactor = 80, ` + designAutovacuum + `);
CREATE INDEX ON ` + tab + ` (queue_no, group_no, dlq, channel_id, visible_at, id);
CREATE INDEX ON ` + tab + ` (queue_no, group_no, message_group, id) WHERE message_group IS NOT NULL AND NOT dlq;
CREATE INDEX ON ` + tab + ` (queue_no, group_no, lease_owner) WHERE lease_owner IS NOT NULL;`
	if primaryKey {
		sql += `
ALTER TABLE ` + tab + ` ADD PRIMARY KEY (queue_no, id, group_no);`
	}
	return sql
}

// keySchema is the tables of the pk and nopkey designs: today's, with and without the primary key.
var keySchema = todayTable("bench_pk_messages", true) + todayTable("bench_nopk_messages", false)

// pkDesign is the pk design: today's statements (from statements.golden.sql) on a table of today's of its own.
func pkDesign(b *testing.B, golden []byte) *leaseDesign {
	pk := onTable("bench_pk_messages")
	return &leaseDesign{name: "pk", tab: "bench_pk_messages", lease: pk.Replace(goldenStatement(b, golden, "messages.lease_one")),
		ack: pk.Replace(goldenStatement(b, golden, "messages.delete")), ackParams: goldenParams(b, golden, "messages.delete")}
}

// noKeyAck is messages.delete without the primary key: each receipt names its row by the lease index's key.
const noKeyAck = `
DELETE FROM bench_nopk_messages m
USING unnest($1::int[], $2::bigint[], $3::bigint[], $4::bool[], $6::text[], $7::timestamptz[]) AS r(group_no, id, lease_id, dlq, channel_id, visible_at)
WHERE m.queue_no = $5 AND m.group_no = r.group_no AND m.dlq = r.dlq AND m.channel_id = r.channel_id
	AND m.visible_at = r.visible_at AND m.id = r.id AND m.lease_id = r.lease_id
RETURNING m.group_no, m.id, false, m.lease_id`

// onTable rewrites ferry's lease and acknowledgement statements (messages.lease_one, messages.delete) to run on
// tab, a table of today's columns and indexes.
func onTable(tab string) *strings.Replacer {
	return strings.NewReplacer(" FROM messages\n", " FROM "+tab+"\n", "UPDATE messages m", "UPDATE "+tab+" m", "DELETE FROM messages m", "DELETE FROM "+tab+" m")
}

// goldenStatement is the text of the named statement in statements.golden.sql.
func goldenStatement(b *testing.B, golden []byte, name string) string {
	_, rest, found := strings.Cut(string(golden), "\n-- "+name+"\n")
	if !found {
		b.Fatalf("statement %s is not in statements.golden.sql", name)
	}
	text, _, _ := strings.Cut(rest, "\n\n")
	return text
}

// goldenParams is the parameter list of a statement in statements.golden.sql (the line "-- $1 @a, $2 @b, …" above
// its name): the names in $k order.
func goldenParams(b *testing.B, golden []byte, name string) []string {
	before, _, found := strings.Cut(string(golden), "\n-- "+name+"\n")
	if !found {
		b.Fatalf("statement %s is not in statements.golden.sql", name)
	}
	line := before[strings.LastIndex(before, "\n")+1:]
	var names []string
	for _, p := range strings.Split(strings.TrimPrefix(line, "-- "), ", ") {
		_, param, ok := strings.Cut(p, " @")
		if !ok {
			b.Fatalf("statement %s: no parameter list above it (%q)", name, line)
		}
		names = append(names, param)
	}
	return names
}

// fill stores the backlog of the design and settles the cluster.
func (d *leaseDesign) fill(b *testing.B, n *node) {
	ctx := context.Background()
	content := `(SELECT string_agg(md5(random()::text || s), '') FROM generate_series(1, 32) s)` // 1,024 hex digits
	statements := designDeletes()
	switch {
	case d.segments:
		statements = append(statements, segmentFill)
	case d.cursor:
		statements = append(statements, fmt.Sprintf(cursorFill[0], content), cursorFill[1])
	case !d.apart:
		statements = append(statements, `INSERT INTO `+d.table()+` (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes, content)
			SELECT $1, 0, g, '', now(), now() + interval '7 days', 1024, `+content+` FROM generate_series(1, $2::int) g`)
	default:
		statements = append(statements, `INSERT INTO `+d.bodies()+` (queue_no, id, content)
			SELECT $1, g, `+content+` FROM generate_series(1, $2::int) g`,
			`INSERT INTO `+d.table()+` (queue_no, group_no, id, channel_id, visible_at, expire_at, size_bytes)
			SELECT $1, 0, g, '', now(), now() + interval '7 days', 1024 FROM generate_series(1, $2::int) g`)
	}
	for _, sql := range statements {
		args := []any{designQueueNo}
		if strings.Contains(sql, "$2") {
			args = append(args, drainMessages)
		}
		if _, err := n.pool.Exec(ctx, sql, args...); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	for _, sql := range []string{`VACUUM ANALYZE messages, message_bodies, ` + strings.Join(designTables, ", "), `CHECKPOINT`} {
		if _, err := n.pool.Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(time.Second)
}

// bodies is the design's table of contents.
func (d *leaseDesign) bodies() string {
	if d.hot {
		return "bench_hot_bodies"
	}
	return "message_bodies"
}

// table is the design's delivery-state table.
func (d *leaseDesign) table() string {
	if d.tab == "" {
		return "messages"
	}
	return d.tab
}

// drain fills the design's backlog and drains it, and logs and adds up what it measured.
func (d *leaseDesign) drain(b *testing.B, n *node, round int) {
	d.fill(b, n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hot0, upd0 := d.updates(b, n) // (reports every session's statistics, WAL's too)
	p0 := n.ownPostgresCPU()
	w0, fpi0 := n.walCounters(b)
	var consumed atomic.Int64
	var failed atomic.Pointer[error] // the first worker's error (errors of several types: not an atomic.Value)
	start := time.Now()
	var wg sync.WaitGroup
	for worker := range designWorkers {
		wg.Go(func() {
			for ctx.Err() == nil && consumed.Load() < int64(drainMessages) {
				k, err := d.leaseAndAck(ctx, n, int64(worker+1))
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					cancel()
					return
				}
				if k == 0 {
					time.Sleep(time.Millisecond)
				}
				consumed.Add(int64(k))
			}
		})
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		err := *p
		var states, visible, bodies int64
		_ = n.pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE visible_at <= now()),
			(SELECT count(*) FROM `+d.bodies()+` WHERE queue_no = $1) FROM `+d.table()+` WHERE queue_no = $1`, designQueueNo).Scan(&states, &visible, &bodies)
		b.Fatalf("%s: %v after %d messages (%d stored, %d visible, %d contents)", d.name, err, consumed.Load(), states, visible, bodies)
	}
	elapsed := time.Since(start).Seconds()
	p1 := n.ownPostgresCPU()
	hot1, upd1 := d.updates(b, n)
	w1, fpi1 := n.walCounters(b)
	if d.cursor { // every range was acknowledged whole, so each went with its last message
		var ranges int
		if err := n.pool.QueryRow(context.Background(), `SELECT count(*) FROM bench_cur_leases WHERE queue_no = $1`, designQueueNo).Scan(&ranges); err != nil || ranges != 0 {
			b.Fatalf("cursor: %d lease ranges left after the drain (%v)", ranges, err)
		}
	}
	msgs := float64(consumed.Load())
	rate, pgMicros := msgs/elapsed, (p1-p0)*1e6/msgs
	b.Logf("round %d: %-6s %.0f msgs/s; per message: postgres CPU %.0f µs, WAL %.0f B, %.3f full-page images; HOT updates %d of %d",
		round, d.name, rate, pgMicros, float64(w1-w0)/msgs, float64(fpi1-fpi0)/msgs, hot1-hot0, upd1-upd0)
	d.rate += rate
	d.pgMicros += pgMicros
}

// updates reads the table's updates and HOT updates so far. A session reports its statistics at most once a
// second, and an idle one only after ten: the pool's sessions are closed first, which reports them. A partitioned
// table's figures are its partitions'.
func (d *leaseDesign) updates(b *testing.B, n *node) (hot, all int64) {
	n.pool.Reset()
	time.Sleep(200 * time.Millisecond)
	if err := n.pool.QueryRow(context.Background(), `SELECT coalesce(sum(n_tup_hot_upd), 0), coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables
		WHERE relid = $1::regclass OR relid IN (SELECT relid FROM pg_partition_tree($1::regclass))`,
		d.table()).Scan(&hot, &all); err != nil {
		b.Fatal(err)
	}
	return hot, all
}

// leaseAndAck leases up to 48 messages and acknowledges them; it returns how many.
func (d *leaseDesign) leaseAndAck(ctx context.Context, n *node, leaseID int64) (int, error) {
	if d.segments {
		return d.leaseAndAckSegments(ctx, n, leaseID)
	}
	if d.cursor {
		got, err := leaseAndAckCursor(ctx, n, designQueueNo, 30, false)
		return got.acked, err
	}
	rows, err := n.pool.Query(ctx, d.lease, designQueueNo, int32(0), false, []string{""}, int32(48), int32(0), int32(30), leaseID, nil)
	if err != nil {
		return 0, err
	}
	var groups []int32
	var ids, leases []int64
	var dlqs []bool
	var channels []string
	var visibleAt []time.Time
	for rows.Next() {
		values, err := rows.Values()
		if err != nil {
			rows.Close()
			return 0, err
		}
		if content, _ := values[6].(string); len(content) != 1024 {
			rows.Close()
			return 0, fmt.Errorf("leased a message of %d bytes", len(content))
		}
		groups, ids = append(groups, values[0].(int32)), append(ids, values[1].(int64))
		leases, dlqs = append(leases, leaseID), append(dlqs, false)
		if d.ackByLeaseKey {
			channels, visibleAt = append(channels, values[2].(string)), append(visibleAt, values[3].(time.Time))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	args := []any{groups, ids, leases, dlqs, designQueueNo}
	if d.ackParams != nil {
		byName := map[string]any{"group_nos": groups, "ids": ids, "lease_ids": leases, "dlqs": dlqs, "queue_no": designQueueNo}
		args = args[:0]
		for _, name := range d.ackParams {
			args = append(args, byName[name])
		}
	}
	if d.ackByLeaseKey {
		args = append(args, channels, visibleAt)
	}
	tag, err := n.pool.Exec(ctx, d.ack, args...)
	if err != nil {
		return 0, err
	}
	if int(tag.RowsAffected()) != len(ids) {
		return 0, fmt.Errorf("acknowledged %d of %d", tag.RowsAffected(), len(ids))
	}
	if d.ackBodies != "" {
		// ferry's maintainer may have taken a content of message_bodies whose row was just deleted (it deletes the
		// contents no row refers to), so only the hot design's own table must match exactly.
		if tag, err := n.pool.Exec(ctx, d.ackBodies, designQueueNo, ids); err != nil || (d.hot && int(tag.RowsAffected()) != len(ids)) {
			return 0, fmt.Errorf("deleted %d of %d contents (%v)", tag.RowsAffected(), len(ids), err)
		}
	}
	return len(ids), nil
}

var (
	designWorkers = envInt("FERRY_BENCH_DESIGN_WORKERS", 4)
	designIdle    = envInt("FERRY_BENCH_DESIGN_IDLE", 0)
)
