package persistence

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

// A lease commits without waiting for its WAL only when its messages stay invisible for the WAL writer's longest
// delay (3 × wal_writer_delay) and a second more after it commits: then its WAL is on disk before they can be
// leased again, and a crash undoes at most a message's last lease. leaseCommit runs after the lease, so a lease
// that took long counts its own time. Otherwise the transaction keeps the session's synchronous_commit, whatever
// it is. The setting ends with the transaction.
func TestLeaseCommitsAsynchronouslyOnlyWhenSafe(t *testing.T) {
	ctx := context.Background()
	pool := connectTest(t, testdb.New(t))
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var delay float64
	require.NoError(t, conn.QueryRow(ctx, `SELECT extract(epoch FROM current_setting('wal_writer_delay')::interval)`).Scan(&delay))
	threshold := 1 + 3*delay                                  // 1.6 s at PostgreSQL's default of 200 ms
	_, err = conn.Exec(ctx, `SET synchronous_commit = local`) // neither on nor off: the lease must keep it
	require.NoError(t, err)
	defer func() { _, _ = conn.Exec(ctx, `RESET synchronous_commit`) }()

	for _, c := range []struct {
		visibility int32
		took       float64 // seconds the lease took before leaseCommit
		want       string
	}{
		{0, 0, "local"},
		{int32(threshold), 0, "local"},
		{int32(threshold) + 1, 0, "off"},
		{int32(threshold) + 1, 0.6, "local"}, // a slow lease: too little of its visibility is left
		{30, 0.6, "off"},
		{43200, 0, "off"},
	} {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, genericPlans)
		require.NoError(t, err)
		if c.took > 0 {
			_, err = tx.Exec(ctx, `SELECT pg_sleep($1)`, c.took)
			require.NoError(t, err)
		}
		_, err = tx.Exec(ctx, leaseCommit, c.visibility)
		require.NoError(t, err)
		var commit, plans string
		require.NoError(t, tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('plan_cache_mode')`).Scan(&commit, &plans))
		require.Equal(t, c.want, commit, "visibility %d s, the lease took %.1f s, wal_writer_delay %.3f s", c.visibility, c.took, delay)
		require.Equal(t, "force_generic_plan", plans)
		require.NoError(t, tx.Commit(ctx))
		require.NoError(t, conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('plan_cache_mode')`).Scan(&commit, &plans))
		require.Equal(t, "local", commit, "the setting is the transaction's only")
		require.NotEqual(t, "force_generic_plan", plans)
	}
}

// The lease path ends a lease's transaction with leaseCommit (so that it may commit asynchronously), never one
// that acknowledges (LeaseAcknowledging waits for its WAL, as an acknowledgement does) — except that a cursor
// lease acknowledges in a transaction of its own, and commits as a lease; under AsynchronousCommits every lease
// starts with genericPlansAsync instead.
func TestLeaseBatchesChooseTheirCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rec := &batchRecorder{}
	cfg, err := pgxpool.ParseConfig(testdb.New(t))
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = rec
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error { registerTextArray(conn); return nil }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	f := newMsgFixture(t, ctx, pool, true)
	f.put(msg("a", "1", ""), msg("a", "2", ""), msg("a", "3", ""), msg("a", "4", ""))

	rec.take()
	first := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 1})
	require.Len(t, first, 1)
	sent := rec.take()
	require.Contains(t, sent, genericPlans)
	require.Equal(t, leaseCommit, sent[len(sent)-1], "leaseCommit ends the lease's transaction")

	f.leases++
	next, deleted, err := f.r.LeaseAcknowledging(ctx, LeaseRequest{QueueID: f.queueID, LeaseID: f.leases,
		Channels: []string{"a", "b"}, Limit: 1, VisibilitySeconds: 60, Acknowledge: receiptsOf(first...)})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, deleted)
	require.Len(t, next, 1)
	sent = rec.take()
	require.Contains(t, sent, genericPlans)
	require.NotContains(t, sent, leaseCommit, "a lease that acknowledges waits for its WAL")

	f.leases++
	last, deleted, err := f.r.LeaseAcknowledging(ctx, LeaseRequest{QueueID: f.queueID, LeaseID: f.leases,
		Channels: []string{"a"}, Limit: 1, VisibilitySeconds: 60, Acknowledge: receiptsOf(next...)})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, deleted)
	require.Len(t, last, 1)
	sent = rec.take()
	require.Contains(t, sent, leaseCommit, "the cursor lease commits as a lease")
	require.Contains(t, sent, messagesDelete.on(f.queueNo), "its acknowledgement apart")

	deleted, _, err = f.r.Delete(ctx, f.queueID, receiptsOf(last...))
	require.NoError(t, err)
	require.Equal(t, []bool{true}, deleted)
	require.Equal(t, []string{genericPlans, messagesDelete.on(f.queueNo)}, rec.take(), "an acknowledgement runs its generic plan and waits for its WAL")

	async := NewMessages(pool, true, AsynchronousCommits())
	f.leases++
	got, err := async.Lease(ctx, LeaseRequest{QueueID: f.queueID, LeaseID: f.leases, Channels: []string{"a"}, Limit: 1, VisibilitySeconds: 60})
	require.NoError(t, err)
	require.Len(t, got, 1)
	sent = rec.take()
	require.Contains(t, sent, genericPlansAsync)
	require.NotContains(t, sent, leaseCommit)
}

// batchRecorder records the SQL of the statements sent in batches (a pgx tracer).
type batchRecorder struct {
	mu  sync.Mutex
	sql []string
}

func (r *batchRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (r *batchRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *batchRecorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (r *batchRecorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (r *batchRecorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sql = append(r.sql, data.SQL)
}

// take returns what was recorded since the last take.
func (r *batchRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sql
	r.sql = nil
	return out
}
