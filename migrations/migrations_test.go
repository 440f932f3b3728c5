package migrations_test

import (
	"context"
	"strings"
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

// ANALYZE samples 300 rows per unit of the largest statistics target among a table's columns: the message tables
// keep every column at 10 (0016), so that autovacuum's frequent analyzes of a busy queue's table stay cheap. A
// column added later without the setting would bring back the 30,000-row sample. Autovacuum analyzes each of the
// tables' partitions (0017) by its own columns' targets, so they are checked too.
func TestMessageTablesSampleFewRows(t *testing.T) {
	conn, err := pgx.Connect(context.Background(), testdb.New(t))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `
		SELECT attrelid::regclass::text || '.' || attname FROM pg_attribute
		WHERE attrelid IN (SELECT t.relid FROM unnest(ARRAY['messages', 'message_bodies']) AS r(name), pg_partition_tree(r.name::regclass) t)
			AND attnum > 0 AND NOT attisdropped
			AND coalesce(nullif(attstattarget, -1), current_setting('default_statistics_target')::int) > 10`)
	require.NoError(t, err)
	wide, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Empty(t, wide, "columns sampled at the default statistics target")
}

// The message tables are split by queue into partitions (0017), each with the settings the single tables had
// (autovacuum's thresholds, fillfactor, no truncation) and the indexes named after the partition.
func TestMessageTablesArePartitionedByQueue(t *testing.T) {
	conn, err := pgx.Connect(context.Background(), testdb.New(t))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `
		SELECT c.relname, array_to_string(c.reloptions, ','),
			(SELECT array_agg(i.indexrelid::regclass::text ORDER BY i.indexrelid::regclass::text) FROM pg_index i WHERE i.indrelid = c.oid)
		FROM unnest(ARRAY['messages', 'message_bodies']) AS r(name), pg_partition_tree(r.name::regclass) t
		JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf
		ORDER BY 1`)
	require.NoError(t, err)
	type partition struct {
		name, options string
		indexes       []string
	}
	partitions, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (partition, error) {
		var p partition
		return p, r.Scan(&p.name, &p.options, &p.indexes)
	})
	require.NoError(t, err)
	require.Len(t, partitions, 16)
	for _, p := range partitions {
		require.Contains(t, p.options, "autovacuum_vacuum_scale_factor=0.01", p.name)
		require.Contains(t, p.options, "vacuum_truncate=false", p.name)
		if strings.HasPrefix(p.name, "message_bodies") {
			require.Equal(t, []string{p.name + "_pkey"}, p.indexes)
			continue
		}
		require.Contains(t, p.options, "fillfactor=80", p.name)
		require.Equal(t, []string{p.name + "_group", p.name + "_lease", p.name + "_lease_owner", p.name + "_pkey"}, p.indexes)
	}
}
