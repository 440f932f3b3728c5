package metering

import (
	"cmp"
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferry-mq/ferry/persistence"
)

// The exported queue instruments: OTel names (the Prometheus exporter adds _total to counters and the unit's
// suffix), with labels tenancy and queue (an OCID, or "other").
var counterInstruments = [numCounters]struct{ name, unit, description string }{
	Published:      {"ferry.queue.messages.published", "{message}", "Messages accepted by PutMessages (duplicates excluded)."},
	PublishedBytes: {"ferry.queue.published", "By", "Bytes of content and attributes accepted by PutMessages."},
	Delivered:      {"ferry.queue.messages.delivered", "{message}", "Message deliveries to consumers (every consumer group's, the DLQ's included)."},
	Acknowledged:   {"ferry.queue.messages.acknowledged", "{message}", "Messages deleted by their consumers."},
	Released:       {"ferry.queue.messages.released", "{message}", "Messages made visible again before their lease ended (visibility 0, negative acknowledgement, a consumer leaving)."},
	DeadLettered:   {"ferry.queue.messages.dead_lettered", "{message}", "Messages moved to a dead-letter queue after too many deliveries."},
	Redriven:       {"ferry.queue.messages.redriven", "{message}", "Messages moved back from a dead-letter queue."},
	Discarded:      {"ferry.queue.messages.discarded", "{message}", "Messages not stored because no consumer group's filter matched."},
	Expired:        {"ferry.queue.messages.expired", "{message}", "Messages deleted by retention."},
}

// other is the queue label of the series that sums a tenancy's queues outside the top.
const other = "other"

// register creates the instruments and the callback that observes them at each collection.
func (m *Meter) register(meter metric.Meter) error {
	var counters [numCounters]metric.Int64ObservableCounter
	var err error
	for c, in := range counterInstruments {
		if counters[c], err = meter.Int64ObservableCounter(in.name, metric.WithUnit(in.unit), metric.WithDescription(in.description)); err != nil {
			return err
		}
	}
	gauge := func(name, unit, description string) metric.Int64ObservableGauge {
		if err != nil {
			return nil
		}
		var g metric.Int64ObservableGauge
		g, err = meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(description))
		return g
	}
	visible := gauge("ferry.queue.messages.visible", "{message}", "Messages ready to be delivered (sampled once a minute).")
	inFlight := gauge("ferry.queue.messages.in_flight", "{message}", "Messages leased to consumers and not yet acknowledged (sampled once a minute).")
	delayed := gauge("ferry.queue.messages.delayed", "{message}", "Messages published with a delay that has not passed (sampled once a minute).")
	dlq := gauge("ferry.queue.dlq.messages", "{message}", "Messages in the queue's dead-letter queue (sampled once a minute).")
	consumers := gauge("ferry.queue.consumers", "{consumer}", "Registered consumers seen in the last 30 s: watches, single active consumers (sampled once a minute).")
	lag := gauge("ferry.queue.partition.lag", "{message}", "A PARTITION consumer group's lag: latest offset minus committed offset, summed over its partitions (sampled once a minute).")
	if err != nil {
		return err
	}
	age, err := meter.Float64ObservableGauge("ferry.queue.oldest_message.age", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest visible message (sampled once a minute; 0 when none is visible)."))
	if err != nil {
		return err
	}
	m.latency, err = meter.Float64Histogram("ferry.message.delivery.latency", metric.WithUnit("s"),
		metric.WithDescription("Time from a message's put to its first delivery."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600))
	if err != nil {
		return err
	}
	instruments := []metric.Observable{visible, inFlight, delayed, dlq, consumers, age, lag}
	for _, c := range counters {
		instruments = append(instruments, c)
	}
	otherAttrs := map[string]metric.ObserveOption{}
	otherOf := func(tenancyID string) metric.ObserveOption {
		a, ok := otherAttrs[tenancyID]
		if !ok {
			a = metric.WithAttributeSet(attribute.NewSet(attribute.String("tenancy", tenancyID), attribute.String("queue", other)))
			otherAttrs[tenancyID] = a
		}
		return a
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if !m.on() {
			return nil
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		// A queue in the top is observed from its base; the rest of its total, the totals of the other queues and
		// of the evicted ones, go to "other", which only grows: when a queue leaves the top, what it counted there
		// moves into "other"; when it joins, its series starts from its total then.
		others := map[string]*[numCounters]int64{}
		sum := func(tenancyID string, v *[numCounters]int64) {
			s := others[tenancyID]
			if s == nil {
				s = &[numCounters]int64{}
				others[tenancyID] = s
			}
			for k := range v {
				s[k] += v[k]
			}
		}
		for tenancyID, r := range m.retired {
			sum(tenancyID, r)
		}
		// While the top has room, a queue joins it at its first export (with all it counted: none of it went to
		// "other" yet), so that a deployment with fewer queues than the bound sees every queue from the start.
		var wholes []*entry
		room := m.cfg.TopQueues
		m.entries.Range(func(_, v any) bool {
			if e := v.(*entry); e.key.GroupNo == persistence.WholeQueue {
				wholes = append(wholes, e)
				e.mu.Lock()
				if e.top {
					room--
				}
				e.mu.Unlock()
			}
			return true
		})
		top := map[string]*entry{}
		for _, e := range wholes {
			e.mu.Lock()
			if !e.top && !e.seen && !e.gone && room > 0 {
				e.top, e.base = true, [numCounters]int64{}
				room--
			}
			e.seen = true
			total, base, isTop := e.total, e.base, e.top
			e.mu.Unlock()
			if !isTop {
				sum(e.key.TenancyID, &total)
				continue
			}
			top[e.key.QueueID] = e
			sum(e.key.TenancyID, &base)
			for c := range counters {
				o.ObserveInt64(counters[c], total[c]-base[c], e.attrs)
			}
		}
		for tenancyID, s := range others {
			for c := range counters {
				o.ObserveInt64(counters[c], s[c], otherOf(tenancyID))
			}
		}
		// Gauges: the top queues' own samples; the others' summed per tenancy (the oldest age: their maximum).
		samples := m.gauges.Load()
		if samples == nil {
			return nil
		}
		rest := map[string]*persistence.Gauges{}
		for _, g := range *samples {
			opt := otherOf(g.TenancyID)
			if e, ok := top[g.QueueID]; ok {
				opt = e.attrs
			} else {
				r := rest[g.TenancyID]
				if r == nil {
					r = &persistence.Gauges{}
					rest[g.TenancyID] = r
				}
				r.Visible += g.Visible
				r.InFlight += g.InFlight
				r.Delayed += g.Delayed
				r.DLQMessages += g.DLQMessages
				r.Consumers += g.Consumers
				r.OldestAgeSeconds = max(r.OldestAgeSeconds, g.OldestAgeSeconds)
				continue
			}
			observeGauges(o, g.Gauges, opt, visible, inFlight, delayed, dlq, consumers, age)
		}
		for tenancyID, g := range rest {
			observeGauges(o, *g, otherOf(tenancyID), visible, inFlight, delayed, dlq, consumers, age)
		}
		// Partition lag: per PARTITION group of the top queues; the others' summed per tenancy (queue and
		// consumer_group "other").
		if lags := m.lags.Load(); lags != nil {
			restLag := map[string]int64{}
			for _, g := range *lags {
				if _, ok := top[g.QueueID]; !ok {
					restLag[g.TenancyID] += g.Lag
					continue
				}
				o.ObserveInt64(lag, g.Lag, groupAttrs(g.TenancyID, g.QueueID, g.GroupID))
			}
			for tenancyID, n := range restLag {
				o.ObserveInt64(lag, n, groupAttrs(tenancyID, other, other))
			}
		}
		return nil
	}, instruments...)
	return err
}

func observeGauges(o metric.Observer, g persistence.Gauges, opt metric.ObserveOption,
	visible, inFlight, delayed, dlq, consumers metric.Int64ObservableGauge, age metric.Float64ObservableGauge) {
	o.ObserveInt64(visible, g.Visible, opt)
	o.ObserveInt64(inFlight, g.InFlight, opt)
	o.ObserveInt64(delayed, g.Delayed, opt)
	o.ObserveInt64(dlq, g.DLQMessages, opt)
	o.ObserveInt64(consumers, int64(g.Consumers), opt)
	o.ObserveFloat64(age, g.OldestAgeSeconds, opt)
}

// rank makes the TopQueues queues with the most events over the last rankWindow flushes the top (queues without
// any are never in it). Called with m.mu held, by Flush.
func (m *Meter) rank(wholes []*entry) {
	type ranked struct {
		e      *entry
		events int64
	}
	list := make([]ranked, 0, len(wholes))
	for _, e := range wholes {
		var events int64
		for _, n := range e.recent {
			events += n
		}
		if events > 0 && !e.gone {
			list = append(list, ranked{e, events})
		}
	}
	slices.SortFunc(list, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.events, a.events), cmp.Compare(a.e.key.QueueID, b.e.key.QueueID))
	})
	inTop := map[*entry]bool{}
	for i := 0; i < len(list) && i < m.cfg.TopQueues; i++ {
		inTop[list[i].e] = true
	}
	for _, e := range wholes {
		e.mu.Lock()
		switch want := inTop[e]; {
		case want && !e.top && !e.gone:
			// What it counted so far stays in "other" if an export put it there; otherwise its series has it all.
			e.top, e.base = true, [numCounters]int64{}
			if e.seen {
				e.base = e.total
			}
		case !want && e.top:
			e.top = false
		}
		e.mu.Unlock()
	}
}

// refreshGauges re-reads the latest samples (of the last few minutes) for the export.
func (m *Meter) refreshGauges(ctx context.Context) {
	rows, err := m.store.LatestGauges(ctx, m.now().Add(-3*time.Minute))
	if err != nil {
		if ctx.Err() == nil {
			m.logger.Warn("reading the latest metric samples", "error", err)
		}
		return
	}
	m.gauges.Store(&rows)
	lags, err := m.store.LatestPartitionLags(ctx, m.now().Add(-3*time.Minute))
	if err != nil {
		if ctx.Err() == nil {
			m.logger.Warn("reading the latest partition lag samples", "error", err)
		}
		return
	}
	m.lags.Store(&lags)
}

// groupAttrs are the labels of a consumer group's series. Built per collection (a scrape, not a hot path), for
// the PARTITION groups of the top queues only.
func groupAttrs(tenancyID, queueID, groupID string) metric.ObserveOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.String("tenancy", tenancyID),
		attribute.String("queue", queueID), attribute.String("consumer_group", groupID)))
}
