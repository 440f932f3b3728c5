// Package httpapi holds the HTTP plumbing both planes share: request ids, panics, body limits, metrics, OpenAPI
// validation and retry tokens. Each piece is a gin middleware.
package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/telemetry"
)

// RequestID echoes the caller's opc-request-id (when sane) or mints one, on every response.
func RequestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader("opc-request-id")
		if id == "" || len(id) > 98 || strings.ContainsAny(id, "\r\n") {
			var b [16]byte
			_, _ = rand.Read(b[:])
			id = strings.ToUpper(hex.EncodeToString(b[:]))
		}
		c.Header("opc-request-id", id)
		c.Next()
	}
}

// Recover turns a panic into a 500 with the JSON body (and a log line), never a dropped connection.
func Recover() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				apierror.Write(c, fmt.Errorf("panic: %v", r))
			}
		}()
		c.Next()
	}
}

// BodyLimit answers 413 PayloadTooLarge for bodies over limit bytes (the control plane's 1 MiB, the data
// plane's 2 MiB), checked on Content-Length up front and enforced while reading.
func BodyLimit(limit func(c *gin.Context) int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		n := limit(c)
		if c.Request.ContentLength > n {
			apierror.Write(c, fault.PayloadTooLarge("the request body is larger than %d bytes", n))
			return
		}
		if c.Request.Body != nil {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, n)
		}
		c.Next()
	}
}

// BodyReadDeadline gives a request's body timeout to arrive (a body trickled a byte at a time would hold its
// connection forever): the connection's read deadline is set when the request has a body, and the Validator lifts
// it once it has read the body, so that the handler — a long poll, a watch — runs without one. A body that is
// still arriving at the deadline answers 408 RequestTimeout (readJSONBody); one that nobody reads (an unknown
// route, another content type) makes net/http close the connection when it tries to drain it.
func BodyReadDeadline(timeout time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		if r := c.Request; r.Body != nil && r.Body != http.NoBody {
			_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(timeout))
		}
		c.Next()
	}
}

// endBodyRead lifts BodyReadDeadline's deadline once the body is read.
func endBodyRead(c *gin.Context) {
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Time{})
}

// IsTooLarge reports whether err comes from reading past the body limit.
func IsTooLarge(err error) bool {
	var maxErr *http.MaxBytesError
	return errors.As(err, &maxErr)
}

// Metrics records every request's duration in OTel's http.server.request.duration, labelled with the route
// template, the method, the status and the OCI operationId (operationOf maps a route to it; "" for routes without
// one). The labels are bounded: routes are the router's, methods outside HTTP's own become _OTHER (semantic
// conventions), statuses are the server's. A request costs one cached lookup of its attribute set and one
// measurement: no attribute set is built per request.
func Metrics(inst *telemetry.Instruments, operationOf func(method, route string) string) gin.HandlerFunc {
	type key struct {
		route, method string
		status        int
	}
	var options sync.Map // key → []metric.RecordOption (a slice, so that passing it allocates nothing)
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		k := key{route: c.FullPath(), method: knownMethod(c.Request.Method), status: c.Writer.Status()}
		opt, ok := options.Load(k)
		if !ok {
			attrs := []attribute.KeyValue{
				attribute.String("http.request.method", k.method),
				attribute.Int("http.response.status_code", k.status),
			}
			if k.route != "" { // an unknown path has no route (and no operation)
				attrs = append(attrs, attribute.String("http.route", k.route))
				if op := operationOf(k.method, k.route); op != "" {
					attrs = append(attrs, attribute.String("operation", op))
				}
			}
			opt, _ = options.LoadOrStore(k, []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))})
		}
		inst.HTTPServerDuration.Record(c.Request.Context(), time.Since(start).Seconds(), opt.([]metric.RecordOption)...)
	}
}

// knownMethod is method when HTTP defines it, else _OTHER: a caller cannot make up label values.
func knownMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "_OTHER"
}

// AccessLog logs each request at debug level, and failures at warn.
func AccessLog(logger *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		status := c.Writer.Status()
		level := slog.LevelDebug
		if status >= 500 {
			level = slog.LevelWarn
		}
		logger.Log(c.Request.Context(), level, "request", "method", c.Request.Method, "path", c.Request.URL.Path,
			"status", status, "duration", time.Since(start), "opcRequestId", c.Writer.Header().Get("opc-request-id"),
			"traceId", trace.SpanContextFromContext(c.Request.Context()).TraceID().String())
	}
}

// PropagateTraceContext puts the caller's W3C trace context (the traceparent header) into the request's context,
// in place of a span per request when spans are not recorded: a producer's trace context still travels with its
// messages to the consumers' spans.
func PropagateTraceContext() gin.HandlerFunc {
	tc := propagation.TraceContext{}
	return func(c *gin.Context) {
		if c.Request.Header.Get("traceparent") != "" {
			c.Request = c.Request.WithContext(tc.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header)))
		}
		c.Next()
	}
}
