package metering

import (
	"context"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/persistence"
)

// SampleDue samples the minute that ended last, once it is settled (sampleDelay after its end) and unless this
// node sampled it already. The maintainer calls it each cycle: one node samples at a time.
func (m *Meter) SampleDue(ctx context.Context) error {
	if !m.on() {
		return nil
	}
	now := m.now().UTC()
	minute := now.Truncate(time.Minute).Add(-time.Minute)
	if now.Sub(minute.Add(time.Minute)) < sampleDelay {
		minute = minute.Add(-time.Minute)
	}
	if !minute.After(m.lastSampled) {
		return nil
	}
	if err := m.Sample(ctx, minute); err != nil {
		return err
	}
	m.lastSampled = minute
	return nil
}

// Sample stores the gauges of minute for every queue with traffic in it or the minute before, or with messages at
// its previous sample, or a PARTITION group's lag at its previous sample: one scan of each such queue's messages (the statement of GetStats' per-group view) and one
// count of its consumers, one sum of its PARTITION groups' lags, and one statement for every row. The whole queue's gauges sum its groups' (its DLQ
// depth: every group's DLQ; its oldest message: the oldest of any group).
func (m *Meter) Sample(ctx context.Context, minute time.Time) error {
	if !m.on() {
		return nil
	}
	minute = minute.UTC().Truncate(time.Minute)
	queues, err := m.store.SampleCandidates(ctx, minute)
	if err != nil || len(queues) == 0 {
		return err
	}
	var rows []persistence.GaugeRow
	for _, q := range queues {
		stats, err := m.messages.StatsByGroup(ctx, q.QueueID, nil, "")
		if fault.Is(err, fault.KindNotFound) {
			continue // deleted and gone
		}
		if err != nil {
			return err
		}
		consumers, err := m.store.Consumers(ctx, q.QueueID, consumerLive)
		if err != nil {
			return err
		}
		whole := persistence.GaugeRow{MetricKey: q, Minute: minute}
		groups := map[int32]*persistence.GaugeRow{}
		group := func(no int32) *persistence.GaugeRow {
			g := groups[no]
			if g == nil {
				g = &persistence.GaugeRow{MetricKey: persistence.MetricKey{TenancyID: q.TenancyID, QueueID: q.QueueID, GroupNo: no}, Minute: minute}
				groups[no] = g
			}
			return g
		}
		for no, s := range stats {
			g := group(no)
			g.Visible, g.InFlight, g.Delayed = s.Queue.Visible, s.Queue.InFlight, s.Queue.Delayed
			g.DLQMessages = s.DLQ.Visible + s.DLQ.InFlight + s.DLQ.Delayed
			g.OldestAgeSeconds = s.Queue.OldestVisibleAge
		}
		for no, n := range consumers {
			group(no).Consumers = n
		}
		lags, err := m.store.PartitionLags(ctx, q.QueueID)
		if err != nil {
			return err
		}
		for no, lag := range lags {
			group(no).PartitionLag = &lag
			whole.PartitionLag = ptrSum(whole.PartitionLag, lag)
		}
		for _, g := range groups {
			whole.Visible += g.Visible
			whole.InFlight += g.InFlight
			whole.Delayed += g.Delayed
			whole.DLQMessages += g.DLQMessages
			whole.Consumers += g.Consumers
			whole.OldestAgeSeconds = max(whole.OldestAgeSeconds, g.OldestAgeSeconds)
			rows = append(rows, *g)
		}
		rows = append(rows, whole)
	}
	if err := m.store.SetGauges(ctx, rows); err != nil {
		return err
	}
	if err := m.usageStore.SetMessageHours(ctx, minute); err != nil {
		return err
	}
	m.refreshGauges(ctx) // this node exports the new samples at once; the others at their next refresh
	return nil
}

// ptrSum adds n to a nullable sum (nil: nothing yet).
func ptrSum(sum *int64, n int64) *int64 {
	if sum != nil {
		n += *sum
	}
	return &n
}

// ExpireBatch deletes up to limit rollups older than the retention, and returns how many (the maintainer drains
// it).
func (m *Meter) ExpireBatch(ctx context.Context, limit int) (int64, error) {
	if m == nil {
		return 0, nil
	}
	return m.store.Expire(ctx, m.now().Add(-m.cfg.Retention), limit)
}
