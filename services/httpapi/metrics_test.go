package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ferry-mq/ferry/services/telemetry"
)

// metricsEngine is a router with Metrics in front of one route, and the reader of what it records.
func metricsEngine(t testing.TB) (*gin.Engine, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	histogram, err := provider.Meter("test").Float64Histogram("http.server.request.duration")
	require.NoError(t, err)
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(Metrics(&telemetry.Instruments{HTTPServerDuration: histogram}, func(method, route string) string {
		if method == http.MethodGet && route == "/queues/:queueId" {
			return "GetQueue"
		}
		return ""
	}))
	r.GET("/queues/:queueId", func(c *gin.Context) { c.Status(http.StatusOK) })
	return r, reader
}

// A request is recorded under its route template, its method and status, and its operation; a path without a
// route has no route or operation, and a method HTTP does not define becomes _OTHER: callers choose no label.
func TestMetricsLabels(t *testing.T) {
	r, reader := metricsEngine(t)
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/queues/ocid1.queue.a", nil),
		httptest.NewRequest(http.MethodGet, "/queues/ocid1.queue.b", nil),
		httptest.NewRequest(http.MethodGet, "/nowhere/ocid1.queue.c", nil),
		httptest.NewRequest("BREW", "/queues/ocid1.queue.d", nil),
	} {
		r.ServeHTTP(httptest.NewRecorder(), req)
	}
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]uint64{}
	for _, dp := range rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.Histogram[float64]).DataPoints {
		got[dp.Attributes.Encoded(attribute.DefaultEncoder())] += dp.Count
	}
	require.Equal(t, map[string]uint64{
		"http.request.method=GET,http.response.status_code=200,http.route=/queues/:queueId,operation=GetQueue": 2,
		"http.request.method=GET,http.response.status_code=404":                                                1,
		"http.request.method=_OTHER,http.response.status_code=404":                                             1,
	}, got)
}

// BenchmarkMetrics is the middleware's cost per request, beyond the router's.
func BenchmarkMetrics(b *testing.B) {
	r, _ := metricsEngine(b)
	req := httptest.NewRequest(http.MethodGet, "/queues/ocid1.queue.a", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		r.ServeHTTP(w, req)
	}
}
