package metering

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/persistence"
)

// Kind says how a metric aggregates into coarser buckets.
type Kind string

// Kinds.
const (
	KindCounter Kind = "COUNTER" // events per bucket: summed
	KindGauge   Kind = "GAUGE"   // sampled once a minute: the maximum or the mean of the bucket's samples
)

// Metric describes one series name of GET /queues/{id}/metrics.
type Metric struct {
	Name  string
	Kind  Kind
	Unit  string
	value func(b *persistence.Bucket, mean bool) float64
}

func counter(name, unit string, v func(c *persistence.Counts) int64) Metric {
	return Metric{name, KindCounter, unit, func(b *persistence.Bucket, _ bool) float64 { return float64(v(&b.Counts)) }}
}

func gauge(name, unit string, v func(b *persistence.Bucket) persistence.GaugeStats) Metric {
	return Metric{name, KindGauge, unit, func(b *persistence.Bucket, mean bool) float64 {
		if mean {
			return v(b).Mean
		}
		return v(b).Max
	}}
}

// Metrics lists every series name, in the order a query without names returns them.
var Metrics = []Metric{
	counter("published", "messages", func(c *persistence.Counts) int64 { return c.Published }),
	counter("publishedBytes", "bytes", func(c *persistence.Counts) int64 { return c.PublishedBytes }),
	counter("delivered", "messages", func(c *persistence.Counts) int64 { return c.Delivered }),
	counter("acknowledged", "messages", func(c *persistence.Counts) int64 { return c.Acknowledged }),
	counter("released", "messages", func(c *persistence.Counts) int64 { return c.Released }),
	counter("deadLettered", "messages", func(c *persistence.Counts) int64 { return c.DeadLettered }),
	counter("redriven", "messages", func(c *persistence.Counts) int64 { return c.Redriven }),
	counter("discarded", "messages", func(c *persistence.Counts) int64 { return c.Discarded }),
	counter("expired", "messages", func(c *persistence.Counts) int64 { return c.Expired }),
	gauge("visible", "messages", func(b *persistence.Bucket) persistence.GaugeStats { return b.Visible }),
	gauge("inFlight", "messages", func(b *persistence.Bucket) persistence.GaugeStats { return b.InFlight }),
	gauge("delayed", "messages", func(b *persistence.Bucket) persistence.GaugeStats { return b.Delayed }),
	gauge("dlqMessages", "messages", func(b *persistence.Bucket) persistence.GaugeStats { return b.DLQMessages }),
	gauge("oldestMessageAge", "seconds", func(b *persistence.Bucket) persistence.GaugeStats { return b.OldestAge }),
	gauge("consumers", "consumers", func(b *persistence.Bucket) persistence.GaugeStats { return b.Consumers }),
	gauge("partitionLag", "messages", func(b *persistence.Bucket) persistence.GaugeStats { return b.PartitionLag }),
}

// Resolutions are the bucket widths a query may ask for.
var Resolutions = map[string]time.Duration{"1m": time.Minute, "5m": 5 * time.Minute, "1h": time.Hour}

// Query limits.
const (
	// MaxPoints bounds the buckets of one query (a day at 1m, two months at 1h).
	MaxPoints = 1440
	// DefaultRange is the span of a query without start.
	DefaultRange = time.Hour
	// Settle is how long after a minute ends its rollups are complete (every node flushed it at its end, the
	// maintainer sampled it sampleDelay later, within its cycle): a query returns only minutes that ended at least
	// this long ago.
	Settle = 30 * time.Second
)

// Query selects series.
type Query struct {
	Names      []string      // empty: every metric
	GroupNo    int32         // persistence.WholeQueue: the queue as a whole
	Start, End time.Time     // zero: End = now - Settle, Start = End - DefaultRange
	Resolution time.Duration // zero: 1m
	Mean       bool          // gauges: the mean of each bucket's samples instead of the maximum
}

// Point is one bucket's value.
type Point struct {
	Timestamp time.Time // the bucket's start
	Value     float64
}

// Series is one metric's points, one per bucket from the query's start to its end (a bucket without rollups is
// zero: no traffic, no messages).
type Series struct {
	Metric
	Points []Point
}

// Result is a query's series and the range they cover (aligned to the resolution).
type Result struct {
	Start, End time.Time
	Resolution time.Duration
	Series     []Series
}

// Series reads the series of a queue that the caller was authorized to read (the queue and the group are
// resolved by the caller).
func (m *Meter) Series(ctx context.Context, queueID string, q Query) (Result, error) {
	metrics, err := selectMetrics(q.Names)
	if err != nil {
		return Result{}, err
	}
	if m == nil {
		return Result{}, fault.InvalidParameter("metrics are not kept by this server")
	}
	res := q.Resolution
	if res == 0 {
		res = time.Minute
	}
	settled := m.now().UTC().Add(-Settle).Truncate(time.Minute)
	end := q.End
	if end.IsZero() || end.After(settled) {
		end = settled
	}
	start := q.Start
	if start.IsZero() {
		start = end.Add(-DefaultRange)
	}
	start, end = align(start.UTC(), res), alignUp(end.UTC(), res)
	if end.After(alignUp(settled, res)) {
		end = alignUp(settled, res)
	}
	if !q.Start.IsZero() && !q.End.IsZero() && !q.Start.Before(q.End) {
		return Result{}, fault.InvalidParameter("start: must be before end")
	}
	if !start.Before(end) { // the range lies entirely in the minutes not settled yet
		return Result{Start: start, End: start, Resolution: res, Series: emptySeries(metrics)}, nil
	}
	if n := end.Sub(start) / res; n > MaxPoints {
		return Result{}, fault.InvalidParameter("the range holds %d buckets of %s: at most %d (narrow start/end or use a coarser resolution)", n, res, MaxPoints)
	}
	buckets, err := m.store.Series(ctx, queueID, q.GroupNo, start, end, res)
	if err != nil {
		return Result{}, err
	}
	out := emptySeries(metrics)
	next := 0
	for t := start; t.Before(end); t = t.Add(res) {
		b := persistence.Bucket{Start: t}
		if next < len(buckets) && buckets[next].Start.Equal(t) {
			b = buckets[next]
			next++
		}
		for i := range out {
			out[i].Points = append(out[i].Points, Point{Timestamp: t, Value: out[i].value(&b, q.Mean)})
		}
	}
	return Result{Start: start, End: end, Resolution: res, Series: out}, nil
}

func emptySeries(metrics []Metric) []Series {
	out := make([]Series, len(metrics))
	for i, mt := range metrics {
		out[i] = Series{Metric: mt, Points: []Point{}}
	}
	return out
}

// selectMetrics resolves names (empty: every metric), in the order asked, without duplicates.
func selectMetrics(names []string) ([]Metric, error) {
	if len(names) == 0 {
		return Metrics, nil
	}
	var out []Metric
	for _, name := range names {
		i := slices.IndexFunc(Metrics, func(mt Metric) bool { return mt.Name == name })
		if i < 0 {
			valid := make([]string, len(Metrics))
			for k, mt := range Metrics {
				valid[k] = mt.Name
			}
			return nil, fault.InvalidParameter("names: unknown metric %q (one of %s)", name, strings.Join(valid, ", "))
		}
		if !slices.ContainsFunc(out, func(mt Metric) bool { return mt.Name == name }) {
			out = append(out, Metrics[i])
		}
	}
	return out, nil
}

// align rounds t down to a whole multiple of res (the buckets' origin is 2000-01-01 UTC, as in metrics.series).
func align(t time.Time, res time.Duration) time.Time {
	return t.Add(-t.Sub(origin) % res)
}

func alignUp(t time.Time, res time.Duration) time.Time {
	if a := align(t, res); a.Before(t) {
		return a.Add(res)
	}
	return t
}

var origin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
