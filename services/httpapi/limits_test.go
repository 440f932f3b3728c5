package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/limits"
)

type usageRecorder struct{ requests, in, out int64 }

func (u *usageRecorder) CountRequest(_, _ string, in, out int64) {
	u.requests++
	u.in += in
	u.out += out
}

// limitsEngine is a router that authenticates every call as tenancy "t" and, with l, applies Limits before a
// PutMessages-shaped route that answers 20 bytes.
func limitsEngine(l *limits.Service, usage UsageCounter) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	principal := &iam.Principal{TenancyID: "t", Subject: "s"}
	r.Use(func(c *gin.Context) {
		c.Request = c.Request.WithContext(iam.WithPrincipal(c.Request.Context(), principal))
	})
	if l != nil {
		r.Use(Limits(l, usage, func(*gin.Context) int64 { return 2 << 20 }))
	}
	r.POST("/20210201/queues/:queueId/messages", func(c *gin.Context) { c.String(http.StatusOK, "01234567890123456789") })
	return r
}

func TestLimitsMiddleware(t *testing.T) {
	store := persistence.NewStore(nil)
	l := limits.New(limits.Config{QueueRequestsPerSecond: 3, MaxInFlightBytes: 1 << 20}, store, nil)
	usage := &usageRecorder{}
	r := limitsEngine(l, usage)
	send := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("POST", "/20210201/queues/q1/messages", strings.NewReader(`{"messages":[]}`)))
		return w
	}
	for range 3 {
		require.Equal(t, http.StatusOK, send().Code)
	}
	w := send()
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, "1", w.Header().Get("Retry-After"))
	require.Contains(t, w.Body.String(), `"TooManyRequests"`)
	require.Equal(t, &usageRecorder{requests: 3, in: 3 * 15, out: 3 * 20}, usage, "served calls are counted, refused ones not")
}

// BenchmarkLimitsMiddleware measures what Limits adds to a call: the same route with and without it (the
// difference is the middleware's cost per request; the ratio is reported).
func BenchmarkLimitsMiddleware(b *testing.B) {
	body := `{"messages":[{"content":"hello"}]}`
	run := func(b *testing.B, r *gin.Engine) {
		req := httptest.NewRequest("POST", "/20210201/queues/q1/messages", nil)
		b.ReportAllocs()
		for b.Loop() {
			req.Body = http.NoBody
			req.ContentLength = int64(len(body))
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatal(w.Code)
			}
		}
	}
	b.Run("without", func(b *testing.B) { run(b, limitsEngine(nil, nil)) })
	b.Run("with", func(b *testing.B) {
		l := limits.New(limits.Config{RequestsPerSecond: 1 << 40, BytesPerSecond: 1 << 50, QueueRequestsPerSecond: 1 << 40,
			QueueBytesPerSecond: 1 << 50}, persistence.NewStore(nil), nil)
		run(b, limitsEngine(l, &usageRecorder{}))
	})
}
