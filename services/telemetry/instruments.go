package telemetry

import (
	"go.opentelemetry.io/otel/metric"
)

// Instruments are the metrics recorded across packages (docs/metrics.md lists every metric, with the packages
// that own the others). Labels are bounded: operations, routes, statuses, never ids a caller chooses.
type Instruments struct {
	Meter metric.Meter // for the instruments that packages register themselves (gauges, IAM, the database)

	// HTTPServerDuration is OTel's http.server.request.duration: one measurement per request, labelled with the
	// route, the method, the status and the OCI operationId (httpapi.Metrics). Its count is the request rate.
	HTTPServerDuration metric.Float64Histogram

	MessagesPublished    metric.Int64Counter // ferry.messages.published{queue}
	MessagesDelivered    metric.Int64Counter // ferry.messages.delivered{queue}
	MessagesAcknowledged metric.Int64Counter // ferry.messages.acknowledged{queue}
	MessagesDiscarded    metric.Int64Counter // ferry.messages.discarded{queue}
	MessagesDeadLettered metric.Int64Counter // ferry.messages.dead_lettered{queue}
	MessagesExpired      metric.Int64Counter // ferry.messages.expired{queue}
}

// Bucket boundaries (seconds) of the latency histograms, chosen for what each measures.
var (
	// RequestBuckets spans a fast put (sub-millisecond) to a long poll's 30 s wait.
	RequestBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	// StatementBuckets spans a primary-key lookup (~100 µs) to a statement timeout.
	StatementBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	// DecisionBuckets spans a remembered IAM decision (~1 µs) to one that loads a tenancy's policies.
	DecisionBuckets = []float64{0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5}
	// LagBuckets spans a NOTIFY on an idle database (~1 ms) to a LISTEN connection that fell behind.
	LagBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)

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
		c, err = m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("{message}"))
		return c
	}
	i.MessagesPublished = counter("ferry.messages.published", "Messages accepted by PutMessages.")
	i.MessagesDelivered = counter("ferry.messages.delivered", "Message deliveries (leases) to consumers.")
	i.MessagesAcknowledged = counter("ferry.messages.acknowledged", "Messages deleted by their consumers.")
	i.MessagesDiscarded = counter("ferry.messages.discarded", "Messages not stored because no consumer group matched.")
	i.MessagesDeadLettered = counter("ferry.messages.dead_lettered", "Messages moved to a dead-letter queue.")
	i.MessagesExpired = counter("ferry.messages.expired", "Messages removed by retention expiry.")
	if err != nil {
		return nil, err
	}
	i.HTTPServerDuration, err = m.Float64Histogram("http.server.request.duration",
		metric.WithDescription("Duration of HTTP server requests, by route, method, status and operation (long polls and watches last as long as they wait)."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(RequestBuckets...))
	if err != nil {
		return nil, err
	}
	return &i, nil
}
