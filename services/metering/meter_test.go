package metering

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/persistence/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// newTestMeter builds a manual meter on a fresh database, exported through a manual reader.
func newTestMeter(t *testing.T, top int) (*Meter, *sdkmetric.ManualReader, *persistence.Store) {
	t.Helper()
	ctx := context.Background()
	pool, err := persistence.Connect(ctx, testdb.New(t), 4)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store := persistence.NewStore(pool)
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	m, err := New(Config{Rollups: true, Manual: true, TopQueues: top}, store, provider.Meter("test"), nil)
	require.NoError(t, err)
	return m, reader, store
}

// published collects ferry.queue.messages.published: queue label → value, per tenancy ("t/q").
func published(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != "ferry.queue.messages.published" {
				continue
			}
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				tenancy, _ := dp.Attributes.Value("tenancy")
				queue, _ := dp.Attributes.Value("queue")
				out[tenancy.AsString()+"/"+queue.AsString()] = dp.Value
			}
		}
	}
	return out
}

// TestExportBoundsQueuesAndLosesNothing: with room for 3 queues, events on 12 queues of 2 tenancies in random
// bursts, flushes that re-rank the busiest: at every collection there are at most 3 queue series besides the
// "other" ones, the series sum to everything counted, and "other" never goes down (a counter); neither does a
// queue's series while it stays in the top.
func TestExportBoundsQueuesAndLosesNothing(t *testing.T) {
	t.Parallel()
	m, reader, _ := newTestMeter(t, 3)
	rng := rand.New(rand.NewPCG(1, 2))
	var total int64
	prev := map[string]int64{}
	minute := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	for round := range 40 {
		for range 50 {
			q := rng.IntN(12)
			// A few queues are busy in each phase of the run, so that the top changes.
			if rng.IntN(3) > 0 {
				q = (round / 10 * 3) % 12
			}
			n := int64(1 + rng.IntN(5))
			m.Count(fmt.Sprintf("t%d", q%2), fmt.Sprintf("q%d", q), persistence.WholeQueue, Published, n)
			total += n
		}
		if round%3 == 2 {
			require.NoError(t, m.Flush(context.Background(), minute.Add(time.Duration(round)*time.Minute)))
		}
		got := published(t, reader)
		var sum int64
		queues := 0
		for key, v := range got {
			sum += v
			if !strings.HasSuffix(key, "/other") {
				queues++
			}
		}
		require.LessOrEqual(t, queues, 3, "round %d: %v", round, got)
		require.Equal(t, total, sum, "round %d: the series sum to what was counted", round)
		// A key present in both collections was in the same place in both (a queue that left the top and came
		// back in between would be absent from one of them only if collected while out).
		for key, v := range got {
			if before, ok := prev[key]; ok {
				require.GreaterOrEqual(t, v, before, "%s went down at round %d", key, round)
			}
		}
		prev = got
	}
}

// TestFlushWritesOnlyWhatHappened: one upsert per flush holds the rows of the queues and groups with traffic;
// an idle meter writes nothing; idle queues are forgotten after evictAfter flushes, and what they counted stays
// in the exported "other".
func TestFlushWritesOnlyWhatHappened(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, reader, store := newTestMeter(t, 10)
	minute := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Hour)
	m.Count("t", "q1", 0, Delivered, 3)
	m.CountGroup("t", "q1", 0, Published, 2)
	m.Count("t", "q1", persistence.WholeQueue, Published, 2)
	m.Count("t", "q2", persistence.WholeQueue, Discarded, 1)
	require.NoError(t, m.Flush(ctx, minute))
	rows := func() int {
		var n int
		require.NoError(t, store.Pool.QueryRow(ctx, `SELECT count(*) FROM queue_metrics`).Scan(&n))
		return n
	}
	require.Equal(t, 3, rows(), "q1 as a whole and its group 0, q2 as a whole")
	b, err := store.Metrics.Series(ctx, "q1", persistence.WholeQueue, minute, minute.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	require.Len(t, b, 1)
	require.EqualValues(t, 2, b[0].Published)
	require.EqualValues(t, 3, b[0].Delivered)

	require.Equal(t, map[string]int64{"t/q1": 2, "t/q2": 0, "t/other": 0}, published(t, reader))
	for i := 1; i <= evictAfter; i++ {
		require.NoError(t, m.Flush(ctx, minute.Add(time.Duration(i)*time.Minute)))
	}
	require.Equal(t, 3, rows(), "idle flushes write nothing")
	left := 0
	m.entries.Range(func(any, any) bool { left++; return true })
	require.Zero(t, left, "idle queues are forgotten")
	require.Equal(t, map[string]int64{"t/other": 2}, published(t, reader), "what they counted stays exported")
}

// TestFlushKeepsCountsWhenTheWriteFails: counts whose write failed are written by the next flush.
func TestFlushKeepsCountsWhenTheWriteFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, _, store := newTestMeter(t, 10)
	minute := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	m.Count("t", "q", persistence.WholeQueue, Published, 7)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.Error(t, m.Flush(cancelled, minute))
	m.Count("t", "q", persistence.WholeQueue, Published, 1)
	require.NoError(t, m.Flush(ctx, minute.Add(time.Minute)))
	b, err := store.Metrics.Series(ctx, "q", persistence.WholeQueue, minute, minute.Add(time.Hour), time.Hour)
	require.NoError(t, err)
	require.Len(t, b, 1)
	require.EqualValues(t, 8, b[0].Published)
}

// TestRetention: ExpireBatch deletes the rollups older than the retention, in batches.
func TestRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, _, store := newTestMeter(t, 10)
	m.cfg.Retention = time.Hour
	now := time.Now().UTC().Truncate(time.Minute)
	for i := range 5 {
		m.Count("t", "q", persistence.WholeQueue, Published, 1)
		require.NoError(t, m.Flush(ctx, now.Add(-time.Duration(i*30)*time.Minute)))
	}
	n, err := m.ExpireBatch(ctx, 1)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	n, err = m.ExpireBatch(ctx, 100)
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "of the rows of 60, 90 and 120 minutes ago")
	var left int
	require.NoError(t, store.Pool.QueryRow(ctx, `SELECT count(*) FROM queue_metrics`).Scan(&left))
	require.Equal(t, 2, left, "the rows of now and 30 minutes ago")
}

// TestSeriesRange: the range is aligned to the resolution, clamped to the settled minutes, and bounded.
func TestSeriesRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, _, _ := newTestMeter(t, 10)
	now := time.Date(2026, 6, 1, 12, 7, 40, 0, time.UTC)
	m.now = func() time.Time { return now }
	r, err := m.Series(ctx, "q", Query{GroupNo: persistence.WholeQueue, Names: []string{"published"}})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 6, 1, 11, 7, 0, 0, time.UTC), r.Start)
	require.Equal(t, time.Date(2026, 6, 1, 12, 7, 0, 0, time.UTC), r.End, "12:07 is not settled before 12:08:30")
	require.Len(t, r.Series[0].Points, 60)
	r, err = m.Series(ctx, "q", Query{GroupNo: persistence.WholeQueue, Resolution: 5 * time.Minute,
		Start: now.Add(-12 * time.Minute), End: now.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 6, 1, 11, 55, 0, 0, time.UTC), r.Start)
	require.Equal(t, time.Date(2026, 6, 1, 12, 10, 0, 0, time.UTC), r.End, "the last bucket is partial")
	require.Len(t, r.Series, len(Metrics))
	_, err = m.Series(ctx, "q", Query{Start: now.Add(-25 * time.Hour)})
	require.ErrorContains(t, err, "at most 1440")
	_, err = m.Series(ctx, "q", Query{Names: []string{"nope"}})
	require.ErrorContains(t, err, `unknown metric "nope"`)
}

// BenchmarkCount is the hot path's cost: a put counts three times (its messages, their bytes, a group's copies),
// a lease and an acknowledgement once each, from every core at once.
func BenchmarkCount(b *testing.B) {
	m := &Meter{cfg: Config{Rollups: true}, retired: map[string]*[numCounters]int64{}}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Count("tenancy", "queue", 0, Delivered, 20)
		}
	})
}

// TestBackgroundFlushAtTheMinute: the loop flushes what was counted into the minute it was counted in, as that
// minute ends, and Stop flushes the rest into the current minute.
func TestBackgroundFlushAtTheMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, _, store := newTestMeter(t, 10)
	m.cfg.Manual = false
	// A clock 200 ms before the end of a minute.
	now := time.Now()
	shift := now.Truncate(time.Minute).Add(time.Minute - 200*time.Millisecond).Sub(now)
	m.now = func() time.Time { return time.Now().Add(shift) }
	counted := m.now().UTC().Truncate(time.Minute)
	m.Count("t", "q", persistence.WholeQueue, Published, 3)
	m.Start(ctx)
	rowsAt := func(minute time.Time) int64 {
		b, err := store.Metrics.Series(ctx, "q", persistence.WholeQueue, minute, minute.Add(time.Minute), time.Minute)
		require.NoError(t, err)
		if len(b) == 0 {
			return 0
		}
		return b[0].Published
	}
	require.Eventually(t, func() bool { return rowsAt(counted) == 3 }, 10*time.Second, 20*time.Millisecond)
	m.Count("t", "q", persistence.WholeQueue, Published, 2)
	m.Stop()
	require.EqualValues(t, 2, rowsAt(counted.Add(time.Minute)), "flushed at stop, into the minute it was counted in")
}
