package persistence

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ferry-mq/ferry/services/telemetry"
)

// Tracer is the pool's pgx tracer: one client span per statement, child of the request's span when that is
// recorded, and — with a meter — every statement's duration in db.client.operation.duration, labelled with the
// statement's name (the "-- name:" of sql/messages/*.sql; "other" for the control plane's unnamed statements),
// never its text: the labels are the compiled statements' names, a fixed set.
type Tracer struct {
	tracer trace.Tracer

	durations metric.Float64Histogram // nil: no metrics
	// byName holds each statement name's attribute set, built once, as a slice: passed without allocating.
	byName map[string][]metric.RecordOption
	other  []metric.RecordOption
}

// NewTracer uses the global tracer provider (set up by services/telemetry); meter, when not nil, records the
// statements' durations.
func NewTracer(meter metric.Meter) (*Tracer, error) {
	t := &Tracer{tracer: otel.Tracer("github.com/ferry-mq/ferry/persistence")}
	if meter == nil {
		return t, nil
	}
	var err error
	t.durations, err = meter.Float64Histogram("db.client.operation.duration",
		metric.WithDescription("Duration of database statements, by statement name (the time to a statement's result in a pipelined batch)."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(telemetry.StatementBuckets...))
	if err != nil {
		return nil, err
	}
	option := func(name string) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(
			attribute.String("db.system.name", "postgresql"), attribute.String("db.query.summary", name)))}
	}
	t.byName = make(map[string][]metric.RecordOption, len(statementNames))
	for _, name := range statementNames {
		t.byName[name] = option(name)
	}
	t.other = option("other")
	return t, nil
}

// statementStart is what TraceQueryStart and TraceBatchStart leave in the context for the end of the statement.
type statementStart struct {
	at     time.Time
	option []metric.RecordOption // the statement's labels (a batch's are per query)
}

type statementStartKey struct{}

// TraceQueryStart notes the start and starts the statement's span.
func (t *Tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if t.durations != nil {
		ctx = context.WithValue(ctx, statementStartKey{}, &statementStart{at: time.Now(), option: t.labels(data.SQL)})
	}
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx // no sampled parent: do not create root spans for background statements
	}
	ctx, _ = t.tracer.Start(ctx, spanName(data.SQL), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system", "postgresql"), attribute.String("db.statement", truncate(data.SQL, 2048))))
	return ctx
}

// TraceQueryEnd records the duration and ends the span, recording the error.
func (t *Tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if start, ok := ctx.Value(statementStartKey{}).(*statementStart); ok {
		t.durations.Record(ctx, time.Since(start.at).Seconds(), start.option...)
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if data.Err != nil {
		span.RecordError(data.Err)
		span.SetStatus(codes.Error, data.Err.Error())
	}
	span.SetAttributes(attribute.Int64("db.rows_affected", data.CommandTag.RowsAffected()))
	span.End()
}

// TraceBatchStart notes when a batch (a pipeline of statements, one implicit transaction) was sent.
func (t *Tracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	if t.durations == nil {
		return ctx
	}
	return context.WithValue(ctx, statementStartKey{}, &statementStart{at: time.Now()})
}

// TraceBatchQuery records a named statement of a batch: the time from the batch's send to its result, which is
// what its caller waits for. The unnamed helpers of a batch (the lease's settings, advisory locks) are left out.
func (t *Tracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	start, ok := ctx.Value(statementStartKey{}).(*statementStart)
	if !ok {
		return
	}
	if option, named := t.byName[statementName(data.SQL)]; named {
		t.durations.Record(ctx, time.Since(start.at).Seconds(), option...)
	}
}

// TraceBatchEnd has nothing to finish: each statement was recorded as its result came.
func (t *Tracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// labels is the attribute set of a statement: its name's, or "other".
func (t *Tracer) labels(sql string) []metric.RecordOption {
	if option, ok := t.byName[statementName(sql)]; ok {
		return option
	}
	return t.other
}

// statementName is the name a compiled statement carries on its first line ("-- NAME"), "" for other SQL. It
// slices sql: no allocation.
func statementName(sql string) string {
	rest, ok := strings.CutPrefix(sql, "-- ")
	if !ok {
		return ""
	}
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		return rest[:i]
	}
	return ""
}

// spanName is the statement's first keyword ("SELECT", "WITH", …): bounded cardinality.
func spanName(sql string) string {
	sql = strings.TrimSpace(sql)
	for strings.HasPrefix(sql, "--") { // skip leading comments that name the query
		if i := strings.IndexByte(sql, '\n'); i >= 0 {
			name := strings.TrimSpace(strings.TrimPrefix(sql[:i], "--"))
			if name != "" && !strings.Contains(name, " ") {
				return "db " + name
			}
			sql = strings.TrimSpace(sql[i+1:])
		} else {
			break
		}
	}
	if i := strings.IndexAny(sql, " \n\t("); i > 0 {
		return "db " + strings.ToUpper(sql[:i])
	}
	return "db query"
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
