package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Usage is the repository of the hourly usage per tenancy and queue (table usage_hourly, migration 0013), the
// basis of billing: requests, bytes in and out, and stored message-hours.
type Usage struct{ pool *pgxpool.Pool }

// UsageRow is one tenancy's and queue's usage in one hour (QueueID "" for calls that name no queue).
type UsageRow struct {
	TenancyID    string    `json:"tenancyId"`
	QueueID      string    `json:"queueId"`
	Hour         time.Time `json:"hour"`
	Requests     int64     `json:"requests"`
	BytesIn      int64     `json:"bytesIn"`
	BytesOut     int64     `json:"bytesOut"`
	MessageHours float64   `json:"messageHours"`
}

// Add adds the rows to the stored usage of their tenancy, queue and hour, in one statement (a metering flush of
// every active tenancy, or a sample's message-hours); several nodes' adds add up.
func (r *Usage) Add(ctx context.Context, rows []UsageRow) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	tenancies, queues := make([]string, n), make([]string, n)
	hours := make([]time.Time, n)
	requests, in, out := make([]int64, n), make([]int64, n), make([]int64, n)
	messageHours := make([]float64, n)
	for i, row := range rows {
		tenancies[i], queues[i], hours[i] = row.TenancyID, row.QueueID, row.Hour.UTC().Truncate(time.Hour)
		requests[i], in[i], out[i], messageHours[i] = row.Requests, row.BytesIn, row.BytesOut, row.MessageHours
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	// Rows are added in one order on every node, so that two flushes never wait on each other's rows crosswise.
	_, err := r.pool.Exec(ctx, `INSERT INTO usage_hourly AS u (tenancy_id, queue_id, hour, requests, bytes_in, bytes_out, message_hours)
		SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[], $5::bigint[], $6::bigint[], $7::float8[])
		ORDER BY 1, 3, 2
		ON CONFLICT (tenancy_id, hour, queue_id) DO UPDATE SET requests = u.requests + excluded.requests,
			bytes_in = u.bytes_in + excluded.bytes_in, bytes_out = u.bytes_out + excluded.bytes_out,
			message_hours = u.message_hours + excluded.message_hours`,
		tenancies, queues, hours, requests, in, out, messageHours)
	return interpretError("adding usage", err)
}

// Of returns a tenancy's usage per queue and hour from since on, oldest first.
func (r *Usage) Of(ctx context.Context, tenancyID string, since time.Time) ([]UsageRow, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, `SELECT tenancy_id, queue_id, hour, requests, bytes_in, bytes_out, message_hours
		FROM usage_hourly WHERE tenancy_id = $1 AND hour >= date_trunc('hour', $2::timestamptz) ORDER BY hour, queue_id`,
		tenancyID, since)
	if err != nil {
		return nil, interpretError("reading usage", err)
	}
	out := []UsageRow{}
	var u UsageRow
	_, err = pgx.ForEachRow(rows, []any{&u.TenancyID, &u.QueueID, &u.Hour, &u.Requests, &u.BytesIn, &u.BytesOut, &u.MessageHours}, func() error {
		u.Hour = u.Hour.UTC()
		out = append(out, u)
		return nil
	})
	return out, interpretError("reading usage", err)
}

// SetMessageHours sets the stored message-hours of minute's hour from the per-minute samples of the queues'
// gauges (queue_metrics): each minute a message was sampled stored (visible, in flight, delayed or in a DLQ) adds
// 1/60. Recomputed from the samples, not added, so that sampling a minute again never counts it twice.
func (r *Usage) SetMessageHours(ctx context.Context, minute time.Time) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := r.pool.Exec(ctx, `INSERT INTO usage_hourly AS u (tenancy_id, queue_id, hour, message_hours)
		SELECT tenancy_id, queue_id, date_trunc('hour', $1::timestamptz),
			sum(coalesce(visible, 0) + coalesce(in_flight, 0) + coalesce(delayed, 0) + coalesce(dlq_messages, 0)) / 60.0
		FROM queue_metrics
		WHERE group_no = -1 AND minute >= date_trunc('hour', $1::timestamptz)
			AND minute < date_trunc('hour', $1::timestamptz) + interval '1 hour'
		GROUP BY tenancy_id, queue_id
		ORDER BY 1, 2
		ON CONFLICT (tenancy_id, hour, queue_id) DO UPDATE SET message_hours = excluded.message_hours`, minute.UTC())
	return interpretError("setting message-hours", err)
}
