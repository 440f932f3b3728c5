package metering

import (
	"context"
	"time"

	"github.com/ferry-mq/ferry/persistence"
)

// Usage for billing (docs/limits.md): every served request of a tenancy is counted in memory, per queue ("" for
// calls that name no queue), with its request and response bytes; each flush adds the counts to the hour's rows of
// usage_hourly in one statement for every tenancy active since the last flush. Stored message-hours come from the
// per-minute samples (SampleUsage).

type usageKey struct{ tenancyID, queueID string }

type usageCounts struct{ requests, in, out int64 }

// CountRequest counts one served request of the tenancy (on the queue, or "") with its request and response
// bytes.
func (m *Meter) CountRequest(tenancyID, queueID string, in, out int64) {
	if !m.on() {
		return
	}
	m.usageMu.Lock()
	c := m.usage[usageKey{tenancyID, queueID}]
	c.requests++
	c.in += in
	c.out += out
	m.usage[usageKey{tenancyID, queueID}] = c
	m.usageMu.Unlock()
}

// flushUsage adds the requests counted since the last flush to hour's usage, in one statement; on failure the
// counts are kept for the next flush.
func (m *Meter) flushUsage(ctx context.Context, hour time.Time) error {
	m.usageMu.Lock()
	counted := m.usage
	m.usage = map[usageKey]usageCounts{}
	m.usageMu.Unlock()
	if len(counted) == 0 {
		return nil
	}
	rows := make([]persistence.UsageRow, 0, len(counted))
	for k, c := range counted {
		rows = append(rows, persistence.UsageRow{TenancyID: k.tenancyID, QueueID: k.queueID, Hour: hour,
			Requests: c.requests, BytesIn: c.in, BytesOut: c.out})
	}
	if err := m.usageStore.Add(ctx, rows); err != nil {
		m.usageMu.Lock()
		for k, c := range counted {
			u := m.usage[k]
			u.requests, u.in, u.out = u.requests+c.requests, u.in+c.in, u.out+c.out
			m.usage[k] = u
		}
		m.usageMu.Unlock()
		return err
	}
	return nil
}

// Usage returns a tenancy's hourly usage since since (the operators' `ferry usage`).
func (m *Meter) Usage(ctx context.Context, tenancyID string, since time.Time) ([]persistence.UsageRow, error) {
	return m.usageStore.Of(ctx, tenancyID, since)
}
