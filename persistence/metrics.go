package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Metrics is the repository of the tenant metrics' per-minute rollups (table queue_metrics, migration 0010; SQL in
// sql/metrics/rollups.sql). The metering service writes them; GET /queues/{id}/metrics reads them.
type Metrics struct{ pool *pgxpool.Pool }

// NewMetrics builds the repository.
func NewMetrics(pool *pgxpool.Pool) *Metrics { return &Metrics{pool: pool} }

// Rollups (sql/metrics/rollups.sql).
var (
	metricsAddCounts        = stmt("metrics.add_counts")
	metricsSetGauges        = stmt("metrics.set_gauges")
	metricsSampleCandidates = stmt("metrics.sample_candidates")
	metricsConsumers        = stmt("metrics.consumers")
	metricsLatestGauges     = stmt("metrics.latest_gauges")
	metricsPartitionLags    = stmt("metrics.partition_lags")
	metricsLatestLags       = stmt("metrics.latest_partition_lags")
	metricsSeries           = stmt("metrics.series")
	metricsExpire           = stmt("metrics.expire")
)

// WholeQueue is the group number of a queue's rows that stand for the queue as a whole.
const WholeQueue int32 = -1

// MetricKey names one row's series: a queue, and one of its consumer groups or WholeQueue.
type MetricKey struct {
	TenancyID string
	QueueID   string
	GroupNo   int32
}

// Counts are the counters of one minute (or their sums over a bucket).
type Counts struct {
	Published, PublishedBytes, Delivered, Acknowledged, Released, DeadLettered, Redriven, Discarded, Expired int64
}

// CountRow is one node's counts of one key and minute.
type CountRow struct {
	MetricKey
	Minute time.Time
	Counts
}

// Gauges are one sample of a queue or group.
type Gauges struct {
	Visible, InFlight, Delayed, DLQMessages int64
	OldestAgeSeconds                        float64
	Consumers                               int32
	// PartitionLag is a PARTITION group's lag (latest offset − committed offset, summed over its partitions), or
	// the sum of the queue's PARTITION groups' for the whole queue; nil where there is no PARTITION group.
	PartitionLag *int64
}

// GaugeRow is one key's sample of one minute.
type GaugeRow struct {
	MetricKey
	Minute time.Time
	Gauges
}

// AddCounts adds the rows to the stored counts of their keys and minutes, in one statement.
func (r *Metrics) AddCounts(ctx context.Context, rows []CountRow) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	var (
		queues, tenancies = make([]string, n), make([]string, n)
		groups            = make([]int32, n)
		minutes           = make([]time.Time, n)
		cols              [9][]int64
	)
	for k := range cols {
		cols[k] = make([]int64, n)
	}
	for i, row := range rows {
		queues[i], tenancies[i], groups[i], minutes[i] = row.QueueID, row.TenancyID, row.GroupNo, row.Minute
		c := row.Counts
		for k, v := range [9]int64{c.Published, c.PublishedBytes, c.Delivered, c.Acknowledged, c.Released,
			c.DeadLettered, c.Redriven, c.Discarded, c.Expired} {
			cols[k][i] = v
		}
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := metricsAddCounts.exec(ctx, r.pool, arg{"queue_ids", queues}, arg{"group_nos", groups}, arg{"minutes", minutes},
		arg{"tenancy_ids", tenancies}, arg{"published", cols[0]}, arg{"published_bytes", cols[1]}, arg{"delivered", cols[2]},
		arg{"acknowledged", cols[3]}, arg{"released", cols[4]}, arg{"dead_lettered", cols[5]}, arg{"redriven", cols[6]},
		arg{"discarded", cols[7]}, arg{"expired", cols[8]})
	return interpretError("writing metric counts", err)
}

// SetGauges stores the samples (replacing earlier samples of the same keys and minutes), in one statement.
func (r *Metrics) SetGauges(ctx context.Context, rows []GaugeRow) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	var (
		queues, tenancies                    = make([]string, n), make([]string, n)
		groups, consumers                    = make([]int32, n), make([]int32, n)
		minutes                              = make([]time.Time, n)
		visible, inFlight, delayed, dlqDepth = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		ages                                 = make([]float64, n)
		lags                                 = make([]*int64, n)
	)
	for i, row := range rows {
		queues[i], tenancies[i], groups[i], minutes[i] = row.QueueID, row.TenancyID, row.GroupNo, row.Minute
		g := row.Gauges
		visible[i], inFlight[i], delayed[i], dlqDepth[i], ages[i], consumers[i] = g.Visible, g.InFlight, g.Delayed,
			g.DLQMessages, g.OldestAgeSeconds, g.Consumers
		lags[i] = g.PartitionLag
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := metricsSetGauges.exec(ctx, r.pool, arg{"queue_ids", queues}, arg{"group_nos", groups}, arg{"minutes", minutes},
		arg{"tenancy_ids", tenancies}, arg{"visible", visible}, arg{"in_flight", inFlight}, arg{"delayed", delayed},
		arg{"dlq_messages", dlqDepth}, arg{"oldest_age_seconds", ages}, arg{"consumers", consumers},
		arg{"partition_lags", lags})
	return interpretError("writing metric samples", err)
}

// SampleCandidates lists the queues (as whole-queue keys) to sample for minute: traffic in it or the minute before,
// or messages at the last sample.
func (r *Metrics) SampleCandidates(ctx context.Context, minute time.Time) ([]MetricKey, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := metricsSampleCandidates.query(ctx, r.pool, arg{"minute", minute})
	if err != nil {
		return nil, interpretError("listing queues to sample", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (MetricKey, error) {
		k := MetricKey{GroupNo: WholeQueue}
		return k, row.Scan(&k.QueueID, &k.TenancyID)
	})
	return out, interpretError("listing queues to sample", err)
}

// Consumers counts the live registered consumers of each group of a queue: those seen within live.
func (r *Metrics) Consumers(ctx context.Context, queueID string, live time.Duration) (map[int32]int32, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := metricsConsumers.query(ctx, r.pool, arg{"queue_id", queueID}, arg{"live", live})
	if err != nil {
		return nil, interpretError("counting consumers", err)
	}
	out := map[int32]int32{}
	var group, n int32
	_, err = pgx.ForEachRow(rows, []any{&group, &n}, func() error {
		out[group] = n
		return nil
	})
	return out, interpretError("counting consumers", err)
}

// LatestGauges returns the latest whole-queue sample of every queue sampled since since.
func (r *Metrics) LatestGauges(ctx context.Context, since time.Time) ([]GaugeRow, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := metricsLatestGauges.query(ctx, r.pool, arg{"since", since})
	if err != nil {
		return nil, interpretError("reading metric samples", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (GaugeRow, error) {
		g := GaugeRow{MetricKey: MetricKey{GroupNo: WholeQueue}}
		return g, row.Scan(&g.QueueID, &g.TenancyID, &g.Visible, &g.InFlight, &g.Delayed, &g.DLQMessages,
			&g.OldestAgeSeconds, &g.Consumers)
	})
	return out, interpretError("reading metric samples", err)
}

// PartitionLags returns the lag of each PARTITION group of a queue, by group number (empty for a queue without
// PARTITION groups).
func (r *Metrics) PartitionLags(ctx context.Context, queueID string) (map[int32]int64, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := metricsPartitionLags.query(ctx, r.pool, arg{"queue_id", queueID})
	if err != nil {
		return nil, interpretError("reading partition lags", err)
	}
	out := map[int32]int64{}
	var (
		group int32
		lag   int64
	)
	_, err = pgx.ForEachRow(rows, []any{&group, &lag}, func() error {
		out[group] = lag
		return nil
	})
	return out, interpretError("reading partition lags", err)
}

// GroupLag is the latest sampled lag of one PARTITION group.
type GroupLag struct {
	MetricKey
	GroupID string
	Lag     int64
}

// LatestPartitionLags returns the latest sampled lag of every PARTITION group sampled since since.
func (r *Metrics) LatestPartitionLags(ctx context.Context, since time.Time) ([]GroupLag, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := metricsLatestLags.query(ctx, r.pool, arg{"since", since})
	if err != nil {
		return nil, interpretError("reading partition lag samples", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (GroupLag, error) {
		var g GroupLag
		return g, row.Scan(&g.QueueID, &g.TenancyID, &g.GroupNo, &g.GroupID, &g.Lag)
	})
	return out, interpretError("reading partition lag samples", err)
}

// GaugeStats are a gauge's maximum and mean over a bucket's samples.
type GaugeStats struct{ Max, Mean float64 }

// Bucket is the rollups of one bucket of a series: the counters' sums and the gauges' statistics (Samples = 0:
// no sample in the bucket, the gauges are zero).
type Bucket struct {
	Start time.Time
	Counts
	Samples                                                       int64
	Visible, InFlight, Delayed, DLQMessages, OldestAge, Consumers GaugeStats
	PartitionLag                                                  GaugeStats // 0 where no sample had a lag
}

// Series reads the rollups of a queue's key (group WholeQueue = the queue as a whole) in [start, end), in buckets
// of resolution aligned to whole multiples of it; buckets without rows are absent.
func (r *Metrics) Series(ctx context.Context, queueID string, groupNo int32, start, end time.Time, resolution time.Duration) ([]Bucket, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := metricsSeries.query(ctx, r.pool, arg{"resolution", resolution}, arg{"queue_id", queueID},
		arg{"group_no", groupNo}, arg{"start", start}, arg{"end", end})
	if err != nil {
		return nil, interpretError("reading metrics", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Bucket, error) {
		var b Bucket
		c := &b.Counts
		err := row.Scan(&b.Start, &c.Published, &c.PublishedBytes, &c.Delivered, &c.Acknowledged, &c.Released,
			&c.DeadLettered, &c.Redriven, &c.Discarded, &c.Expired, &b.Samples,
			&b.Visible.Max, &b.Visible.Mean, &b.InFlight.Max, &b.InFlight.Mean, &b.Delayed.Max, &b.Delayed.Mean,
			&b.DLQMessages.Max, &b.DLQMessages.Mean, &b.OldestAge.Max, &b.OldestAge.Mean, &b.Consumers.Max, &b.Consumers.Mean,
			&b.PartitionLag.Max, &b.PartitionLag.Mean)
		b.Start = b.Start.UTC()
		return b, err
	})
	return out, interpretError("reading metrics", err)
}

// Expire deletes up to limit rollups older than cutoff, and returns how many.
func (r *Metrics) Expire(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	tag, err := metricsExpire.exec(ctx, r.pool, arg{"cutoff", cutoff}, arg{"limit", limit})
	return tag.RowsAffected(), interpretError("expiring metrics", err)
}
