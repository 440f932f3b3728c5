package persistence

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

// A metered pool records each statement's duration under its name — a plain query, a pipelined batch's named
// statement, and "other" for unnamed SQL — and reports its connections and acquires.
func TestStatementAndPoolMetrics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, reader := meteredPool(ctx, t, testdb.New(t))
	f := newMsgFixture(t, ctx, pool, false)
	f.put(msg("a", "x", ""))                                                    // a batch of one named statement
	require.Len(t, f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 1}), 1) // a batch: prelude, then the lease
	_, _, err := f.r.Stats(ctx, f.queueID, 0, "")                               // plain queries
	require.NoError(t, err)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	metrics := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			require.NotEmpty(t, m.Description, m.Name)
			require.NotEmpty(t, m.Unit, m.Name)
			metrics[m.Name] = m.Data
		}
	}

	durations, ok := metrics["db.client.operation.duration"].(metricdata.Histogram[float64])
	require.True(t, ok, "db.client.operation.duration is a histogram")
	counts := map[string]uint64{}
	for _, dp := range durations.DataPoints {
		summary, ok := dp.Attributes.Value("db.query.summary")
		require.True(t, ok)
		system, _ := dp.Attributes.Value("db.system.name")
		require.Equal(t, "postgresql", system.AsString())
		require.Equal(t, 2, dp.Attributes.Len(), "no label but the system and the statement's name")
		counts[summary.AsString()] += dp.Count
	}
	require.Positive(t, counts["messages.insert_one_copy"]+counts["messages.insert"], "the put: %v", counts)
	require.Positive(t, counts["messages.lease_cursor"], "the lease, sent in a batch: %v", counts)
	require.Positive(t, counts["messages.stats"], "a plain query: %v", counts)
	require.Positive(t, counts["other"], "the fixture's unnamed SQL: %v", counts)
	for name := range counts {
		_, known := statements[name]
		require.True(t, known || name == "other", "label %q is not a statement's name", name)
	}

	gauge := func(name string, attrs ...attribute.KeyValue) int64 {
		t.Helper()
		sum, ok := metrics[name].(metricdata.Sum[int64])
		require.True(t, ok, "%s is a sum", name)
		want := attribute.NewSet(attrs...)
		for _, dp := range sum.DataPoints {
			if dp.Attributes.Equals(&want) {
				return dp.Value
			}
		}
		t.Fatalf("%s has no point with %v", name, attrs)
		return 0
	}
	require.EqualValues(t, 3, gauge("db.client.connection.max"))
	used := gauge("db.client.connection.count", attribute.String("db.client.connection.state", "used"))
	idle := gauge("db.client.connection.count", attribute.String("db.client.connection.state", "idle"))
	require.Zero(t, used, "nothing holds a connection between statements")
	require.Positive(t, idle)
	require.Positive(t, gauge("ferry.db.pool.acquires"))
	_, ok = metrics["ferry.db.pool.acquire.duration"].(metricdata.Sum[float64])
	require.True(t, ok)
}

// meteredPool connects a pool of 3 to url whose meter a manual reader collects.
func meteredPool(ctx context.Context, t *testing.T, url string) (*pgxpool.Pool, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	pool, err := Connect(ctx, url, 3, WithMeter(provider.Meter("test")))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, reader
}

// The database's health gauges: the message tables' live and dead row versions (over their partitions), and the
// age of the oldest open transaction, which an idle transaction left open makes grow.
func TestDatabaseHealthMetrics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := testdb.New(t)
	pool, reader := meteredPool(ctx, t, url)
	f := newMsgFixture(t, ctx, pool, false)
	for range 3 {
		f.put(msg("a", "x", ""))
	}
	leased := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 3})
	require.Len(t, leased, 3) // three dead row versions: the leased rows' old ones
	_, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
	require.NoError(t, err)

	collect := func() (gauges map[string]float64) {
		t.Helper()
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(ctx, &rm))
		gauges = map[string]float64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch data := m.Data.(type) {
				case metricdata.Gauge[int64]:
					require.NotEmpty(t, m.Description, m.Name)
					for _, dp := range data.DataPoints {
						table, _ := dp.Attributes.Value("db.collection.name")
						gauges[m.Name+"/"+table.AsString()] = float64(dp.Value)
					}
				case metricdata.Gauge[float64]:
					for _, dp := range data.DataPoints {
						gauges[m.Name] = dp.Value
					}
				}
			}
		}
		return gauges
	}
	require.Eventually(t, func() bool { // the statistics reach the collector within a second or so
		g := collect()
		return g["ferry.db.table.live_tuples/messages"] >= 3 && g["ferry.db.table.dead_tuples/messages"] >= 3
	}, 10*time.Second, 100*time.Millisecond, "%v", collect())
	g := collect()
	require.Contains(t, g, "ferry.db.table.live_tuples/message_bodies")
	require.Contains(t, g, "ferry.db.table.dead_tuples/message_bodies")
	require.Less(t, g["ferry.db.oldest_transaction.age"], 5.0, "no transaction is open but the collection's own")

	conn, err := pgx.Connect(ctx, url) // a client that leaves a transaction open
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, `BEGIN; SELECT txid_current()`)
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond)
	require.GreaterOrEqual(t, collect()["ferry.db.oldest_transaction.age"], 1.5)
}

// The tracer takes a statement's name from its first line only, without allocating, and nothing else for one.
func TestStatementName(t *testing.T) {
	require.Equal(t, "messages.stats", statementName(stmt("messages.stats").sql))
	require.Empty(t, statementName("SELECT 1"))
	require.Empty(t, statementName("-- no newline"))
	require.Equal(t, 0.0, testing.AllocsPerRun(100, func() { _ = statementName(stmt("messages.stats").sql) }))
}
