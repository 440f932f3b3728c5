package pgcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestOpenReuseAndStaleLock(t *testing.T) {
	if _, err := FindBinaries(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	opts := Options{Dir: dir, NoSync: true, Database: "ferry_test"}

	first, err := Open(ctx, opts)
	require.NoError(t, err)
	require.True(t, first.Owned())
	t.Cleanup(func() { _ = first.Stop(context.Background()) })
	ping(t, first.URL(""))

	// A second Open on the same directory uses the running cluster and does not own it.
	second, err := Open(ctx, opts)
	require.NoError(t, err)
	require.False(t, second.Owned())
	require.Equal(t, first.Port(), second.Port())
	ping(t, second.URL(""))
	require.NoError(t, second.Stop(ctx)) // no-op: not ours
	ping(t, first.URL(""))

	require.NoError(t, first.Stop(ctx))
	require.NoError(t, first.Stop(ctx)) // twice is fine

	// A postmaster.pid whose process is gone (a killed run) is cleared and the cluster starts again.
	pidFile := filepath.Join(first.pgdata, "postmaster.pid")
	require.NoError(t, os.WriteFile(pidFile, []byte("999999\n"+first.pgdata+"\n1\n"+strconv.Itoa(first.Port())+"\n/tmp\n"), 0o600))
	third, err := Open(ctx, opts)
	require.NoError(t, err)
	require.True(t, third.Owned())
	ping(t, third.URL(""))
	require.NoError(t, third.Stop(ctx))
}

func ping(t *testing.T, url string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var one int
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
}

// TestRestartAfterKill: when the postgres this process started dies (every process of it SIGKILLed, as a power cut
// would), it is started again on the same port, so that the same URL works again.
func TestRestartAfterKill(t *testing.T) {
	if _, err := FindBinaries(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	c, err := Open(ctx, Options{Dir: t.TempDir(), NoSync: true, Database: "ferry_test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	ping(t, c.URL(""))
	for range 2 {
		c.mu.Lock()
		pid := c.proc.Pid
		c.mu.Unlock()
		require.NoError(t, syscall.Kill(-pid, syscall.SIGKILL))
		require.Eventually(t, func() bool {
			conn, err := pgx.Connect(ctx, c.URL(""))
			if err != nil {
				return false
			}
			_ = conn.Close(ctx)
			return true
		}, 30*time.Second, 20*time.Millisecond)
		c.mu.Lock()
		require.NotEqual(t, pid, c.proc.Pid, "a new postmaster")
		c.mu.Unlock()
	}
	require.NoError(t, c.Stop(ctx))
	time.Sleep(300 * time.Millisecond)
	_, err = pgx.Connect(ctx, c.URL(""))
	require.Error(t, err, "stopped, and not restarted")
}

// TestOpenWaitsForAStoppingCluster: a postgres that is shutting down (its ferry died: the parent-death signal
// stops it) is waited for and started afresh, not reused — a restarted ferry used to wait a minute for it to
// accept connections, and fail.
func TestOpenWaitsForAStoppingCluster(t *testing.T) {
	if _, err := FindBinaries(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	opts := Options{Dir: t.TempDir(), NoSync: true, Database: "ferry_test", StartTimeout: 20 * time.Second}
	first, err := Open(ctx, opts)
	require.NoError(t, err)
	// A session keeps a smart shutdown (SIGTERM) in "stopping" until it leaves; first no longer supervises (as if
	// its process had died).
	hold, err := pgx.Connect(ctx, first.URL(""))
	require.NoError(t, err)
	first.mu.Lock()
	first.stopping = true
	pid := first.proc.Pid
	first.mu.Unlock()
	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	require.Eventually(t, func() bool {
		lines, err := readLines(filepath.Join(first.pgdata, "postmaster.pid"))
		return err == nil && len(lines) >= 8 && strings.TrimSpace(lines[7]) == "stopping"
	}, 10*time.Second, 10*time.Millisecond)

	type opened struct {
		c   *Cluster
		err error
		at  time.Time
	}
	done := make(chan opened, 1)
	go func() {
		c, err := Open(ctx, opts)
		done <- opened{c, err, time.Now()}
	}()
	time.Sleep(500 * time.Millisecond)
	released := time.Now()
	_ = hold.Close(ctx) // the old postgres can stop now
	got := <-done
	require.NoError(t, got.err)
	t.Cleanup(func() { _ = got.c.Stop(context.Background()) })
	require.True(t, got.at.After(released), "Open waited for the stopping postgres")
	require.True(t, got.c.Owned(), "started afresh")
	ping(t, got.c.URL(""))
	require.NoError(t, first.Stop(ctx))
}

// TestIsPostgresIgnoresZombies: a postmaster that has exited but is not yet reaped (its ferry died, and init reaps
// orphans when it gets to them) no longer runs; waiting for its zombie to vanish delayed every restart of ferry.
func TestIsPostgresIgnoresZombies(t *testing.T) {
	binDir, err := FindBinaries()
	if err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	exited := exec.Command(binary(binDir, "postgres"), "--version")
	require.NoError(t, exited.Start()) // not waited for: it stays a zombie until Wait
	defer func() { _ = exited.Wait() }()
	require.Eventually(t, func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(exited.Process.Pid) + "/stat")
		return err == nil && strings.Contains(string(stat), ") Z ")
	}, 10*time.Second, 10*time.Millisecond)
	require.False(t, isPostgres(exited.Process.Pid), "a zombie postgres is not running")

	live := exec.Command("sleep", "10")
	require.NoError(t, live.Start())
	defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
	require.False(t, isPostgres(live.Process.Pid), "another program is not postgres")

	c, err := Open(context.Background(), Options{Dir: t.TempDir(), NoSync: true, Database: "ferry_test"})
	require.NoError(t, err)
	defer func() { _ = c.Stop(context.Background()) }()
	c.mu.Lock()
	pid := c.proc.Pid
	c.mu.Unlock()
	require.True(t, isPostgres(pid), "a running postmaster")
}
