package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/api"
)

// paramValues are the values tried for every parameter: valid ones and every kind of near miss.
var paramValues = []string{
	"", "0", "1", "-1", "-0", "2", "20", "32", "33", "900", "901", "43200", "43201", "01", "1.0", "1e1", " 1", "+1", "0x10",
	"abc", "9999999999", "2147483648", "true", "false", "TRUE", "True", "yes", "a", strings.Repeat("x", 98),
	strings.Repeat("x", 99), strings.Repeat("x", 255), strings.Repeat("x", 256), strings.Repeat("é", 255),
	strings.Repeat("é", 256), testQueue, "ocid1.queue.ferry.local.short", "OCID1.queue.ferry.local." + strings.Repeat("a", 32),
	"pod-1.example:8080", "bad id", "\xff\xfe", "ch*", "NORMAL", "primary",
}

// The fast parameter check accepts only what kin-openapi accepts, and leaves the request as kin-openapi would
// (the same defaults in the query); what it declines, kin-openapi judges.
func TestFastParamsAgreeWithKinOpenAPI(t *testing.T) {
	spec, err := api.GetSwagger()
	require.NoError(t, err)
	v := NewValidator(spec)
	fastRoutes, tried, accepted := 0, 0, 0
	for key, r := range v.routes {
		if r.params == nil {
			continue
		}
		fastRoutes++
		path := "/"
		base := map[string]string{} // path parameters, valid
		for _, p := range r.params {
			if p.in == openapi3.ParameterInPath {
				base[p.name] = testQueue
				if p.schema.Pattern == "" {
					base[p.name] = "some-receipt"
				}
			}
		}
		check := func(desc string, build func(req *http.Request, pathParams map[string]string)) {
			tried++
			fastReq, kinReq := httptest.NewRequest(http.MethodGet, path, nil), httptest.NewRequest(http.MethodGet, path, nil)
			fastPath, kinPath := map[string]string{}, map[string]string{}
			for k, v := range base {
				fastPath[k], kinPath[k] = v, v
			}
			build(fastReq, fastPath)
			build(kinReq, kinPath)
			before := fastReq.URL.RawQuery
			if !r.params.check(fastReq, fastPath) {
				require.Equal(t, before, fastReq.URL.RawQuery, "%s %s: a declined request is left as it was", key, desc)
				return
			}
			accepted++
			input := &openapi3filter.RequestValidationInput{Request: kinReq, PathParams: kinPath, Route: r.Route, Options: v.paramOpts}
			require.NoError(t, openapi3filter.ValidateRequest(context.Background(), input), "%s %s: accepted by the fast check", key, desc)
			require.Equal(t, kinReq.URL.RawQuery, fastReq.URL.RawQuery, "%s %s: the same defaults", key, desc)
		}
		check("no parameters", func(*http.Request, map[string]string) {})
		for _, p := range r.params {
			for _, value := range paramValues {
				desc := p.in + " " + p.name + "=" + value
				switch p.in {
				case openapi3.ParameterInPath:
					check(desc, func(_ *http.Request, pp map[string]string) { pp[p.name] = value })
				case openapi3.ParameterInQuery:
					check(desc, func(req *http.Request, _ map[string]string) { req.URL.RawQuery = url.Values{p.name: {value}}.Encode() })
					check(desc+" twice", func(req *http.Request, _ map[string]string) {
						req.URL.RawQuery = url.Values{p.name: {value, value}}.Encode()
					})
				case openapi3.ParameterInHeader:
					check(desc, func(req *http.Request, _ map[string]string) { req.Header.Set(p.name, value) })
				}
			}
		}
	}
	t.Logf("%d operations checked by the fast path; %d of %d requests accepted by it", fastRoutes, accepted, tried)
	require.Greater(t, accepted, 100)

	// The data plane's hot operations take the fast path with their usual parameters.
	for _, hot := range []struct{ route, query string }{
		{"GET /20210201/queues/:queueId/messages", "limit=32&timeoutInSeconds=1"},
		{"GET /20210201/queues/:queueId/messages", "limit=10&visibilityInSeconds=30&consumerGroupId=primary&channelFilter=ch*"},
		{"POST /20210201/queues/:queueId/messages", ""},
		{"POST /20210201/queues/:queueId/messages/actions/deleteMessages", ""},
	} {
		r := v.routes[hot.route]
		require.NotNil(t, r, hot.route)
		require.NotNil(t, r.params, "%s has a fast parameter check", hot.route)
		req := httptest.NewRequest(http.MethodGet, "/?"+hot.query, nil)
		require.True(t, r.params.check(req, map[string]string{"queueId": testQueue}), "%s?%s", hot.route, hot.query)
	}
	// Missing parameters get the spec's defaults, as kin-openapi writes them.
	req := httptest.NewRequest(http.MethodGet, "/?timeoutInSeconds=0", nil)
	require.True(t, v.routes["GET /20210201/queues/:queueId/messages"].params.check(req, map[string]string{"queueId": testQueue}))
	require.Equal(t, "dlq=false&limit=1&timeoutInSeconds=0", req.URL.RawQuery)
}

func BenchmarkValidateGetMessagesParams(b *testing.B) {
	spec, err := api.GetSwagger()
	require.NoError(b, err)
	v := NewValidator(spec)
	r := v.routes["GET /20210201/queues/:queueId/messages"]
	pathParams := map[string]string{"queueId": testQueue}
	for _, mode := range []string{"fast", "kin"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/?limit=32&timeoutInSeconds=1", nil)
				if mode == "fast" {
					if !r.params.check(req, pathParams) {
						b.Fatal("declined")
					}
					continue
				}
				input := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: r.Route, Options: v.paramOpts}
				if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
