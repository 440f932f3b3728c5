package persistence

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Tracer is a pgx.QueryTracer that records one client span per statement, child of the request's span.
type Tracer struct {
	tracer trace.Tracer
}

// NewTracer uses the global tracer provider (set up by services/telemetry).
func NewTracer() *Tracer {
	return &Tracer{tracer: otel.Tracer("github.com/ferry-mq/ferry/persistence")}
}

// TraceQueryStart starts the statement's span.
func (t *Tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx // no sampled parent: do not create root spans for background statements
	}
	ctx, _ = t.tracer.Start(ctx, spanName(data.SQL), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system", "postgresql"), attribute.String("db.statement", truncate(data.SQL, 2048))))
	return ctx
}

// TraceQueryEnd ends it, recording the error.
func (t *Tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
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
