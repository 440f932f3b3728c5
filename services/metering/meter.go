// Package metering counts what happens to each queue's messages, for two audiences. Tenants read per-minute
// rollups through GET /queues/{id}/metrics: each node counts in memory and adds its counts of the minute to
// PostgreSQL once a minute, in one statement for every queue it saw traffic on (several nodes add up), and the
// maintainer samples the gauges of the queues with traffic or messages once a minute. Operators scrape the same
// counts from /metrics, as OpenTelemetry observable instruments whose per-queue series are bounded to the busiest
// queues. A queue without traffic and without messages costs nothing: no memory after an hour, no rows, no
// statements.
package metering

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferry-mq/ferry/internal/startstop"
	"github.com/ferry-mq/ferry/persistence"
)

// Counter is one of the events counted per queue and consumer group.
type Counter uint8

// The counters. Published counts messages on a whole queue's row and the copies a group received on a group's;
// the others count a group's copies (and their sum on the whole queue's row).
const (
	Published      Counter = iota // accepted by PutMessages (duplicates excluded)
	PublishedBytes                // the content and attribute bytes of the published messages
	Delivered                     // leased to a consumer (GetMessages, watches), the DLQ's included
	Acknowledged                  // deleted by their consumer
	Released                      // made visible again before their lease ended (visibility 0, negative ack)
	DeadLettered                  // moved to the dead-letter queue after too many deliveries
	Redriven                      // moved back from the dead-letter queue
	Discarded                     // not stored: no consumer group's filter matched
	Expired                       // deleted by retention
	numCounters
)

// Config tunes metering: FERRY_METRICS_*.
type Config struct {
	// Rollups: count and write the per-minute rollups (and the queue series of /metrics). Default true; false is
	// for measuring what they cost.
	Rollups bool `env:"FERRY_METRICS_ROLLUPS" envDefault:"true"`
	// Retention is how long rollups are kept. Default 14 days.
	Retention time.Duration `env:"FERRY_METRICS_RETENTION" envDefault:"336h"`
	// TopQueues bounds the per-queue series of /metrics: the busiest queues get their own, the others are summed
	// into queue="other" per tenancy. Default 100.
	TopQueues int `env:"FERRY_METRICS_TOP_QUEUES" envDefault:"100"`
	// Manual: no background flush; the caller flushes (tests that place counts in chosen minutes).
	Manual bool `env:"-"`
}

// Timing of the background work.
const (
	// evictAfter is how many flushes without traffic a queue stays in memory.
	evictAfter = 60
	// rankWindow is how many minutes of traffic rank the busiest queues.
	rankWindow = 10
	// gaugeRefresh is how often the exported gauges are re-read from the latest samples.
	gaugeRefresh = 15 * time.Second
	// sampleDelay is how long after a minute ends it is sampled: the nodes' flushes of it are in by then.
	sampleDelay = 5 * time.Second
	// consumerLive is how recently a registered consumer must have been seen to count.
	consumerLive = 30 * time.Second
)

// Meter counts, flushes, samples and exports. A nil *Meter counts nothing.
type Meter struct {
	cfg      Config
	store    *persistence.Metrics
	messages *persistence.Messages
	logger   *slog.Logger
	now      func() time.Time

	entries sync.Map // persistence.MetricKey → *entry

	mu      sync.Mutex                     // flushes, ranking and the export callback
	retired map[string]*[numCounters]int64 // per tenancy: the totals of queues evicted from memory
	slot    int                            // the ring slot of entry.recent the next flush fills
	current time.Time                      // the minute being counted (background flush)

	gauges      atomic.Pointer[[]persistence.GaugeRow] // the latest samples, for the export
	lags        atomic.Pointer[[]persistence.GroupLag] // the latest samples of PARTITION groups' lags
	lastSampled time.Time                              // the last minute this node sampled

	usageStore *persistence.Usage
	usageMu    sync.Mutex
	usage      map[usageKey]usageCounts // requests since the last flush (usage.go)

	latency      metric.Float64Histogram
	tenancyAttrs sync.Map // tenancy → metric.RecordOption
	loop         startstop.Base
}

// entry holds one key's counts.
type entry struct {
	key  persistence.MetricKey
	mu   sync.Mutex
	gone bool // evicted: counting goes to a new entry

	minute [numCounters]int64 // since the last flush

	// Whole-queue entries only (the exported series).
	total  [numCounters]int64 // since the process started
	base   [numCounters]int64 // total when the queue last joined the top: its series counts from there
	top    bool
	seen   bool              // observed by an export (into "other" unless top)
	recent [rankWindow]int64 // events per flush, over the last rankWindow flushes
	idle   int               // flushes in a row without traffic
	attrs  metric.ObserveOption
}

// New builds a meter over the store (the rollups; the messages, for sampling), registering its instruments on
// meter (nil: no export).
func New(cfg Config, store *persistence.Store, meter metric.Meter, logger *slog.Logger) (*Meter, error) {
	if cfg.TopQueues <= 0 {
		cfg.TopQueues = 100
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 14 * 24 * time.Hour
	}
	if logger == nil {
		logger = slog.Default()
	}
	m := &Meter{cfg: cfg, store: store.Metrics, messages: persistence.NewMessages(store.Pool, false), logger: logger, now: time.Now,
		retired: map[string]*[numCounters]int64{}, usageStore: store.Usage, usage: map[usageKey]usageCounts{}}
	if meter != nil {
		if err := m.register(meter); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// on reports whether the meter counts.
func (m *Meter) on() bool { return m != nil && m.cfg.Rollups }

// Count records n events of a consumer group (groupNo >= 0) on its row and on its queue's, or of the queue as a
// whole (persistence.WholeQueue) on the queue's row only.
func (m *Meter) Count(tenancyID, queueID string, groupNo int32, c Counter, n int64) {
	if n == 0 || !m.on() {
		return
	}
	if groupNo >= 0 {
		m.add(persistence.MetricKey{TenancyID: tenancyID, QueueID: queueID, GroupNo: groupNo}, c, n)
	}
	m.add(persistence.MetricKey{TenancyID: tenancyID, QueueID: queueID, GroupNo: persistence.WholeQueue}, c, n)
}

// CountGroup records n events on a consumer group's row only (the copies of published messages it received).
func (m *Meter) CountGroup(tenancyID, queueID string, groupNo int32, c Counter, n int64) {
	if n == 0 || !m.on() {
		return
	}
	m.add(persistence.MetricKey{TenancyID: tenancyID, QueueID: queueID, GroupNo: groupNo}, c, n)
}

// DeliveryLatency records how long a message waited between its put and its first delivery.
func (m *Meter) DeliveryLatency(ctx context.Context, tenancyID string, wait time.Duration) {
	if !m.on() || m.latency == nil {
		return
	}
	opt, ok := m.tenancyAttrs.Load(tenancyID)
	if !ok {
		opt, _ = m.tenancyAttrs.LoadOrStore(tenancyID, metric.WithAttributeSet(attribute.NewSet(attribute.String("tenancy", tenancyID))))
	}
	m.latency.Record(ctx, max(0, wait.Seconds()), opt.(metric.RecordOption))
}

func (m *Meter) add(k persistence.MetricKey, c Counter, n int64) {
	for {
		e := m.entry(k)
		e.mu.Lock()
		if !e.gone {
			e.minute[c] += n
			e.total[c] += n
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
}

func (m *Meter) entry(k persistence.MetricKey) *entry {
	if v, ok := m.entries.Load(k); ok {
		return v.(*entry)
	}
	v, _ := m.entries.LoadOrStore(k, &entry{key: k, attrs: metric.WithAttributeSet(attribute.NewSet(
		attribute.String("tenancy", k.TenancyID), attribute.String("queue", k.QueueID)))})
	return v.(*entry)
}

// activity is an entry's events that rank the busiest queues (bytes excluded).
func activity(c *[numCounters]int64) int64 {
	var sum int64
	for k, v := range c {
		if Counter(k) != PublishedBytes {
			sum += v
		}
	}
	return sum
}

// Flush adds every count since the last flush to the rollups of minute (in one statement), ranks the busiest
// queues again, and forgets queues idle for evictAfter flushes. When the write fails the counts are kept for the
// next flush.
func (m *Meter) Flush(ctx context.Context, minute time.Time) error {
	if !m.on() {
		return nil
	}
	minute = minute.UTC().Truncate(time.Minute)
	m.mu.Lock()
	defer m.mu.Unlock()
	var rows []persistence.CountRow
	var wholes []*entry
	m.entries.Range(func(_, v any) bool {
		e := v.(*entry)
		e.mu.Lock()
		counts := e.minute
		e.minute = [numCounters]int64{}
		e.mu.Unlock()
		busy := activity(&counts) > 0 || counts[PublishedBytes] > 0
		if busy {
			rows = append(rows, persistence.CountRow{MetricKey: e.key, Minute: minute, Counts: countsOf(&counts)})
			e.idle = 0
		} else {
			e.idle++
		}
		if e.key.GroupNo == persistence.WholeQueue {
			e.recent[m.slot] = activity(&counts)
			wholes = append(wholes, e)
		}
		if e.idle >= evictAfter {
			if last := m.evict(e); activity(&last) > 0 || last[PublishedBytes] > 0 {
				rows = append(rows, persistence.CountRow{MetricKey: e.key, Minute: minute, Counts: countsOf(&last)})
			}
		}
		return true
	})
	m.slot = (m.slot + 1) % rankWindow
	m.rank(wholes)
	if err := m.store.AddCounts(ctx, rows); err != nil {
		for _, r := range rows {
			m.restore(r)
		}
		return err
	}
	return m.flushUsage(ctx, minute.Truncate(time.Hour))
}

// evict forgets an idle entry; it returns what was counted on it since the flush read it (a race with a count).
// A whole queue's totals move to its tenancy's retired totals, which the "other" series include. Called with
// m.mu held.
func (m *Meter) evict(e *entry) [numCounters]int64 {
	m.entries.CompareAndDelete(e.key, e)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gone = true
	last := e.minute
	if e.key.GroupNo == persistence.WholeQueue {
		r := m.retired[e.key.TenancyID]
		if r == nil {
			r = &[numCounters]int64{}
			m.retired[e.key.TenancyID] = r
		}
		for k, v := range e.total {
			r[k] += v
		}
		e.top = false
	}
	return last
}

// restore puts the counts of a row that could not be written back, to be flushed again.
func (m *Meter) restore(r persistence.CountRow) {
	counts := arrayOf(r.Counts)
	for {
		e := m.entry(r.MetricKey)
		e.mu.Lock()
		if !e.gone {
			for k, v := range counts {
				e.minute[k] += v
			}
			e.idle = 0
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
}

func countsOf(c *[numCounters]int64) persistence.Counts {
	return persistence.Counts{Published: c[Published], PublishedBytes: c[PublishedBytes], Delivered: c[Delivered],
		Acknowledged: c[Acknowledged], Released: c[Released], DeadLettered: c[DeadLettered], Redriven: c[Redriven],
		Discarded: c[Discarded], Expired: c[Expired]}
}

func arrayOf(c persistence.Counts) [numCounters]int64 {
	return [numCounters]int64{c.Published, c.PublishedBytes, c.Delivered, c.Acknowledged, c.Released,
		c.DeadLettered, c.Redriven, c.Discarded, c.Expired}
}

// Start runs the background flush (at each minute's end) and the refresh of the exported gauges, unless the
// meter is off or manual.
func (m *Meter) Start(ctx context.Context) {
	if !m.on() {
		return
	}
	m.loop.Start(ctx, m.run)
}

// Stop ends the loop and flushes what was counted since the last flush into the current minute.
func (m *Meter) Stop() {
	if !m.on() {
		return
	}
	m.loop.Stop()
	if m.cfg.Manual {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Flush(ctx, m.now()); err != nil {
		m.logger.Warn("flushing metrics at stop", "error", err)
	}
}

func (m *Meter) run(ctx context.Context) {
	m.current = m.now().UTC().Truncate(time.Minute)
	refresh := time.NewTicker(gaugeRefresh)
	defer refresh.Stop()
	m.refreshGauges(ctx)
	for {
		var flush <-chan time.Time
		var timer *time.Timer
		if !m.cfg.Manual {
			timer = time.NewTimer(m.current.Add(time.Minute).Sub(m.now()))
			flush = timer.C
		}
		select {
		case <-ctx.Done():
		case <-flush:
			minute := m.current
			m.current = m.now().UTC().Truncate(time.Minute)
			if err := m.Flush(ctx, minute); err != nil && ctx.Err() == nil {
				m.logger.Warn("flushing metrics", "minute", minute, "error", err)
			}
		case <-refresh.C:
			m.refreshGauges(ctx)
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}
