package persistence

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/persistence/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// connectTest opens a pool (as Connect does for ferry) on url, a database of testdb.New, and closes it when the
// test ends.
func connectTest(tb testing.TB, url string) *pgxpool.Pool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := Connect(ctx, url, 4)
	require.NoError(tb, err)
	tb.Cleanup(pool.Close)
	return pool
}

// A batch that PostgreSQL aborts to break a real deadlock is sent again and succeeds; a deadlock that is not
// retried answers 503, never a 500.
func TestSendRetryingAfterDeadlock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := connectTest(t, testdb.New(t))
	_, err := pool.Exec(ctx, `CREATE TABLE pair (id int PRIMARY KEY, n int NOT NULL); INSERT INTO pair VALUES (1, 0), (2, 0);
		ALTER DATABASE `+pool.Config().ConnConfig.Database+` SET deadlock_timeout = '1s'`)
	require.NoError(t, err)
	pool.Reset() // new connections see the database's deadlock_timeout

	// The other transaction holds row 1 until the batch waits for it, then asks for row 2, which the batch holds.
	other, err := pool.Begin(ctx)
	require.NoError(t, err)
	// The other's own deadlock check comes long after the batch's (1 s): on a loaded machine the two checks'
	// timers could otherwise fire in either order, and abort the other instead. And the batch's check comes long
	// after the other joins the cycle (PostgreSQL checks once, deadlock_timeout after a wait starts: a cycle that
	// closes later is found by the other's check only).
	_, err = other.Exec(ctx, `SET LOCAL deadlock_timeout = '10s'`)
	require.NoError(t, err)
	_, err = other.Exec(ctx, `UPDATE pair SET n = n + 1 WHERE id = 1`)
	require.NoError(t, err)
	otherDone := make(chan error, 1)
	go func() {
		// Only once the batch has taken row 2 and waited for row 1 for half the deadlock_timeout: the batch must be
		// the first to wait, by a margin, so that its deadlock check runs first and aborts it.
		if err := waitForLockWait(ctx, pool, 100*time.Millisecond); err != nil {
			_ = other.Rollback(ctx)
			otherDone <- err
			return
		}
		if _, err := other.Exec(ctx, `UPDATE pair SET n = n + 1 WHERE id = 2`); err != nil {
			_ = other.Rollback(ctx)
			otherDone <- err
			return
		}
		otherDone <- other.Commit(ctx)
	}()

	r := NewMessages(pool, true)
	attempts := 0
	err = r.sendRetrying(ctx, func(batch *pgx.Batch) {
		attempts++
		batch.Queue(`UPDATE pair SET n = n + 10 WHERE id = 2`)
		batch.Queue(`UPDATE pair SET n = n + 10 WHERE id = 1`)
	})
	require.NoError(t, err)
	require.NoError(t, <-otherDone, "the batch (the first to wait) was the one aborted")
	require.GreaterOrEqual(t, attempts, 2, "aborted, then sent again")
	var n1, n2 int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT n FROM pair WHERE id = 1), (SELECT n FROM pair WHERE id = 2)`).Scan(&n1, &n2))
	require.Equal(t, []int{11, 11}, []int{n1, n2}, "both transactions applied once")

	require.True(t, fault.Is(interpretError("leasing messages", deadlockError(t, ctx, pool)), fault.KindUnavailable))
}

// deadlockError provokes a deadlock between two transactions and returns the aborted one's error.
func deadlockError(t *testing.T, ctx context.Context, pool interface {
	Begin(context.Context) (pgx.Tx, error)
}) error {
	a, err := pool.Begin(ctx)
	require.NoError(t, err)
	b, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = a.Exec(ctx, `UPDATE pair SET n = n WHERE id = 1`)
	require.NoError(t, err)
	_, err = b.Exec(ctx, `UPDATE pair SET n = n WHERE id = 2`)
	require.NoError(t, err)
	// Each transaction asks for the other's row and then rolls back; one of them is aborted to break the cycle.
	errs := make(chan error, 2)
	for tx, id := range map[pgx.Tx]int{a: 2, b: 1} {
		go func() {
			_, err := tx.Exec(ctx, `UPDATE pair SET n = n WHERE id = $1`, id)
			_ = tx.Rollback(ctx)
			errs <- err
		}()
	}
	var aborted error
	for range 2 {
		if err := <-errs; err != nil {
			require.True(t, isDeadlock(err), "%v", err)
			aborted = err
		}
	}
	require.Error(t, aborted, "no deadlock")
	return aborted
}

// waitForLockWait polls until a session of pool's database has waited for a lock for at least d.
func waitForLockWait(ctx context.Context, pool *pgxpool.Pool, d time.Duration) error {
	for {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE a.datname = current_database() AND NOT l.granted
				AND l.waitstart <= clock_timestamp() - make_interval(secs => $1))`, d.Seconds()).Scan(&waiting)
		if err != nil || waiting {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
