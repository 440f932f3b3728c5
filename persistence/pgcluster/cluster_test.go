package pgcluster

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

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
