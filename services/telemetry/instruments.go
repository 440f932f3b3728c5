package telemetry

import (
	"go.opentelemetry.io/otel/metric"
)

// Instruments are ferry's request metrics (DESIGN section 9). The queues' message metrics are the metering
// service's (services/metering), which bounds their per-queue series.
type Instruments struct {
	Meter metric.Meter // for observable instruments registered by the services

	HTTPRequests metric.Int64Counter     // ferry.http.server.requests{operation,method,status}
	HTTPDuration metric.Float64Histogram // ferry.http.server.duration{operation,method,status} seconds
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
