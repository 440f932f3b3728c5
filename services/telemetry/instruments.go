package telemetry

import (
	"go.opentelemetry.io/otel/metric"
)

// Instruments are ferry's metrics (DESIGN section 9). Labels: tenancy, queue, consumer group, operation.
type Instruments struct {
	Meter metric.Meter // for observable instruments registered by the services

	HTTPRequests metric.Int64Counter     // ferry.http.server.requests{operation,method,status}
	HTTPDuration metric.Float64Histogram // ferry.http.server.duration{operation,method,status} seconds

	MessagesPublished    metric.Int64Counter // ferry.messages.published{queue}
	MessagesDelivered    metric.Int64Counter // ferry.messages.delivered{queue}
	MessagesAcknowledged metric.Int64Counter // ferry.messages.acknowledged{queue}
	MessagesDiscarded    metric.Int64Counter // ferry.messages.discarded{queue}
	MessagesDeadLettered metric.Int64Counter // ferry.messages.dead_lettered{queue}
	MessagesExpired      metric.Int64Counter // ferry.messages.expired{queue}
}

func newInstruments(m metric.Meter) (*Instruments, error) {
	var (
		i   = Instruments{Meter: m}
		err error
	)
	counter := func(name, desc string) metric.Int64Counter {
		if err != nil {
			return nil
		}
		var c metric.Int64Counter
		c, err = m.Int64Counter(name, metric.WithDescription(desc))
		return c
	}
	i.HTTPRequests = counter("ferry.http.server.requests", "HTTP requests served, by operation and status.")
	i.MessagesPublished = counter("ferry.messages.published", "Messages accepted by PutMessages.")
	i.MessagesDelivered = counter("ferry.messages.delivered", "Message deliveries (leases) to consumers.")
	i.MessagesAcknowledged = counter("ferry.messages.acknowledged", "Messages deleted by their consumers.")
	i.MessagesDiscarded = counter("ferry.messages.discarded", "Messages not stored because no consumer group matched.")
	i.MessagesDeadLettered = counter("ferry.messages.dead_lettered", "Messages moved to a dead-letter queue.")
	i.MessagesExpired = counter("ferry.messages.expired", "Messages removed by retention expiry.")
	if err != nil {
		return nil, err
	}
	i.HTTPDuration, err = m.Float64Histogram("ferry.http.server.duration",
		metric.WithDescription("HTTP request latency by operation."), metric.WithUnit("s")) // buckets: latencyView
	if err != nil {
		return nil, err
	}
	return &i, nil
}
