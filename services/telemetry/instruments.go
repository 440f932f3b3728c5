package telemetry

import (
	"go.opentelemetry.io/otel/metric"
)

// Instruments are the metrics recorded across packages (docs/metrics.md lists every metric). The queues' message
// metrics are the metering service's (services/metering), which bounds their per-queue series; IAM, the database
// and the data plane register their own instruments on Meter. Labels are bounded: operations, routes, statuses,
// never ids a caller chooses.
type Instruments struct {
	Meter metric.Meter // for the instruments that packages register themselves (gauges, IAM, the database)

	// HTTPServerDuration is OTel's http.server.request.duration: one measurement per request, labelled with the
	// route, the method, the status and the OCI operationId (httpapi.Metrics). Its count is the request rate.
	HTTPServerDuration metric.Float64Histogram
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
	i := Instruments{Meter: m}
	var err error
	i.HTTPServerDuration, err = m.Float64Histogram("http.server.request.duration",
		metric.WithDescription("Duration of HTTP server requests, by route, method, status and operation (long polls and watches last as long as they wait)."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(RequestBuckets...))
	if err != nil {
		return nil, err
	}
	return &i, nil
}
