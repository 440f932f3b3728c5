package messaging

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/telemetry"
)

// serviceMetrics are the node-level metrics of the data plane that operators alert on: long polls waiting, and
// the health of the LISTEN/NOTIFY path that wakes them across nodes. The zero value records nothing.
type serviceMetrics struct {
	notifyLag          metric.Float64Histogram
	local, remote      metric.RecordOption
	listenerReconnects metric.Int64Counter
}

// newServiceMetrics registers the instruments on meter (none when meter is nil); waiting counts this node's long
// polls.
func newServiceMetrics(meter metric.Meter, waiting func() int) serviceMetrics {
	var m serviceMetrics
	if meter == nil {
		return m
	}
	// Failing to create an instrument only means a metric is missing (the SDK logs why): not a reason to refuse
	// to serve.
	_, _ = meter.Int64ObservableGauge("ferry.receives.waiting",
		metric.WithDescription("GetMessages calls long-polling on this node (they hold no database connection)."),
		metric.WithUnit("{request}"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(waiting()))
			return nil
		}))
	lag, err := meter.Float64Histogram("ferry.notify.lag",
		metric.WithDescription("Time from sending a data-plane NOTIFY (wake-ups of long polls and watches) to receiving it on the LISTEN connection, by origin: local (this node's own, one clock) or remote (another node's, across clocks)."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(telemetry.LagBuckets...))
	if err == nil {
		m.notifyLag = lag
		m.local = metric.WithAttributeSet(attribute.NewSet(attribute.String("origin", "local")))
		m.remote = metric.WithAttributeSet(attribute.NewSet(attribute.String("origin", "remote")))
	}
	reconnects, err := meter.Int64Counter("ferry.listen.reconnects",
		metric.WithDescription("Times the LISTEN connection was re-established after a loss: meanwhile this node missed wake-ups from other nodes and its waiters fell back to polling."),
		metric.WithUnit("{reconnect}"))
	if err == nil {
		m.listenerReconnects = reconnects
		reconnects.Add(context.Background(), 0) // 0, not absent, until the first loss
	}
	return m
}

// notified records the lag of a notification that carries its send time (local: sent by this node).
func (m serviceMetrics) notified(n persistence.Notification, local bool) {
	if m.notifyLag == nil || n.Sent.IsZero() {
		return
	}
	option := m.remote
	if local {
		option = m.local
	}
	m.notifyLag.Record(context.Background(), max(time.Since(n.Sent), 0).Seconds(), option) // skew may make it negative
}

func (m serviceMetrics) reconnected() {
	if m.listenerReconnects != nil {
		m.listenerReconnects.Add(context.Background(), 1)
	}
}
