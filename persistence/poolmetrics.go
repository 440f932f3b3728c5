package persistence

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// observePool registers the pool's gauges and counters, read from pgxpool's statistics at each collection (a
// scrape), so that they cost nothing between scrapes. Names follow OTel's database client conventions where they
// have one (db.client.connection.*); pgxpool's acquire statistics, which they have not, are ferry.db.pool.*.
func observePool(meter metric.Meter, pool *pgxpool.Pool) error {
	var (
		used = metric.WithAttributeSet(attribute.NewSet(attribute.String("db.client.connection.state", "used")))
		idle = metric.WithAttributeSet(attribute.NewSet(attribute.String("db.client.connection.state", "idle")))
	)
	count, err := meter.Int64ObservableUpDownCounter("db.client.connection.count",
		metric.WithDescription("Connections of the pool, by state: used (acquired by a request or a worker) or idle."),
		metric.WithUnit("{connection}"))
	if err != nil {
		return err
	}
	maxConns, err := meter.Int64ObservableUpDownCounter("db.client.connection.max",
		metric.WithDescription("The most connections the pool opens (FERRY_DB_MAX_CONNS)."), metric.WithUnit("{connection}"))
	if err != nil {
		return err
	}
	acquires, err := meter.Int64ObservableCounter("ferry.db.pool.acquires",
		metric.WithDescription("Connections acquired from the pool."), metric.WithUnit("{acquire}"))
	if err != nil {
		return err
	}
	waited, err := meter.Int64ObservableCounter("ferry.db.pool.waited_acquires",
		metric.WithDescription("Acquires that had to wait because every connection was in use (or being opened): the pool is saturated while this grows."),
		metric.WithUnit("{acquire}"))
	if err != nil {
		return err
	}
	canceled, err := meter.Int64ObservableCounter("ferry.db.pool.canceled_acquires",
		metric.WithDescription("Acquires given up (the caller's context ended) before a connection was free."),
		metric.WithUnit("{acquire}"))
	if err != nil {
		return err
	}
	acquireTime, err := meter.Float64ObservableCounter("ferry.db.pool.acquire.duration",
		metric.WithDescription("Time spent acquiring connections, all acquires together: divided by ferry.db.pool.acquires, the mean wait for a connection."),
		metric.WithUnit("s"))
	if err != nil {
		return err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := pool.Stat()
		o.ObserveInt64(count, int64(st.AcquiredConns()), used)
		o.ObserveInt64(count, int64(st.IdleConns()), idle)
		o.ObserveInt64(maxConns, int64(st.MaxConns()))
		o.ObserveInt64(acquires, st.AcquireCount())
		o.ObserveInt64(waited, st.EmptyAcquireCount())
		o.ObserveInt64(canceled, st.CanceledAcquireCount())
		o.ObserveFloat64(acquireTime, st.AcquireDuration().Seconds())
		return nil
	}, count, maxConns, acquires, waited, canceled, acquireTime)
	return err
}
