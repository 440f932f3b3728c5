package iam

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferry-mq/ferry/iam/policy"
	"github.com/ferry-mq/ferry/services/telemetry"
)

// Metrics records what operators watch of IAM: how long authorizing a request takes, and the denials, which a
// caller sees only as 404s that look like missing resources. Labels are bounded: a result of three values and the
// permissions statements can grant.
type Metrics struct {
	decisions    metric.Float64Histogram
	denials      metric.Int64Counter
	results      map[string][]metric.RecordOption // decision result → its attribute set (slices: passed without allocating)
	byPermission map[string][]metric.AddOption    // permission → its attribute set
}

// The results of authorizing a request.
const (
	resultAllowed = "allowed" // a statement allowed it
	resultDenied  = "denied"  // no statement allowed it (the caller gets 404)
	resultFailed  = "failed"  // no decision: the target does not exist, or the database did not answer
)

// NewMetrics creates the instruments. Every permission's denial counter starts at zero, so that a rate over it is
// 0, not absent, until the first denial.
func NewMetrics(meter metric.Meter) (*Metrics, error) {
	decisions, err := meter.Float64Histogram("ferry.iam.decision.duration",
		metric.WithDescription("Time to authorize a request: find its target's compartment, load the tenancy's policies when they changed, decide (remembered decisions included)."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(telemetry.DecisionBuckets...))
	if err != nil {
		return nil, err
	}
	denials, err := meter.Int64Counter("ferry.iam.denials",
		metric.WithDescription("Requests denied by IAM (answered 404 NotAuthorizedOrNotFound), by the permission they lacked."),
		metric.WithUnit("{request}"))
	if err != nil {
		return nil, err
	}
	m := &Metrics{decisions: decisions, denials: denials, results: map[string][]metric.RecordOption{},
		byPermission: map[string][]metric.AddOption{}}
	for _, r := range []string{resultAllowed, resultDenied, resultFailed} {
		m.results[r] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("result", r)))}
	}
	for _, p := range policy.AllPermissions() {
		m.byPermission[p] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("permission", p)))}
		denials.Add(context.Background(), 0, m.byPermission[p]...)
	}
	return m, nil
}

// record records one authorization that started at start and ended with err. Safe on a nil Metrics.
func (m *Metrics) record(ctx context.Context, start time.Time, permission string, err error) {
	if m == nil {
		return
	}
	result := resultAllowed
	switch {
	case errors.As(err, new(denial)):
		result = resultDenied
		if option, ok := m.byPermission[permission]; ok {
			m.denials.Add(ctx, 1, option...)
		}
	case err != nil:
		result = resultFailed
	}
	m.decisions.Record(ctx, time.Since(start).Seconds(), m.results[result]...)
}

// denial is the error of a request that no statement allows: to the caller a NotFound fault, exactly like a
// missing resource (it unwraps to one); to the metrics a denial.
type denial struct{ error }

func (d denial) Unwrap() error { return d.error }
