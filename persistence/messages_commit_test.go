package persistence

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

// A lease commits without waiting for its WAL only when its visibility timeout outlasts the WAL writer's
// longest delay (3 × wal_writer_delay) by more than a second: then its WAL is on disk before its messages can be
// leased again, and a crash undoes at most a message's last lease. Otherwise the transaction keeps the session's
// synchronous_commit, whatever it is. Both settings end with the transaction.
func TestLeasePreludeCommitsAsynchronouslyOnlyWhenSafe(t *testing.T) {
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
		want       string
	}{
		{0, "local"},
		{int32(threshold), "local"},
		{int32(threshold) + 1, "off"},
		{30, "off"},
		{43200, "off"},
	} {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, leasePrelude, c.visibility)
		require.NoError(t, err)
		var commit, plans string
		require.NoError(t, tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('plan_cache_mode')`).Scan(&commit, &plans))
		require.Equal(t, c.want, commit, "visibility %d s, wal_writer_delay %.3f s", c.visibility, delay)
		require.Equal(t, "force_generic_plan", plans)
		require.NoError(t, tx.Commit(ctx))
		require.NoError(t, conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('plan_cache_mode')`).Scan(&commit, &plans))
		require.Equal(t, "local", commit, "the setting is the transaction's only")
		require.NotEqual(t, "force_generic_plan", plans)
	}

	// A lease that acknowledges waits for its WAL, as an acknowledgement does.
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, leasePreludeDurable)
	require.NoError(t, err)
	var commit string
	require.NoError(t, tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&commit))
	require.Equal(t, "local", commit)
	require.NoError(t, tx.Rollback(ctx))
}
