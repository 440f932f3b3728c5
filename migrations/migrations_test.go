package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/migrations"
	"github.com/ferry-mq/ferry/persistence/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// Every migration applies, reverts and applies again on a real database.
func TestUpDownUp(t *testing.T) {
	ctx := context.Background()
	url := testdb.New(t) // cloned from a template that is already migrated up
	version, dirty, err := migrations.Version(ctx, url)
	require.NoError(t, err)
	require.False(t, dirty)
	require.Equal(t, migrations.Latest(), version)

	require.NoError(t, migrations.Down(ctx, url, 0))
	require.Equal(t, 0, countTables(t, url), "down leaves no ferry tables behind")

	require.NoError(t, migrations.Up(ctx, url))
	version, _, err = migrations.Version(ctx, url)
	require.NoError(t, err)
	require.Equal(t, migrations.Latest(), version)
	require.NoError(t, migrations.Up(ctx, url), "up again is a no-op")
}

func countTables(t *testing.T, url string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'`).Scan(&n))
	return n
}
