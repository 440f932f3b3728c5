package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/api"
)

// JSONTextProblem names the first string or key a PostgreSQL text column cannot hold, and passes everything else,
// including what only looks like an escape.
func TestJSONTextProblem(t *testing.T) {
	for _, tc := range []struct {
		body, want string // want: the message, "" = accepted
	}{
		{`{"a":"x"}`, ""},
		{`{"a":"\ud83d\ude00","b":"\\ud800","c":"\\u0000","d":"\ufffd","e":"\u00e9"}`, ""},
		{"{\"a\":\"é✉\"}", ""},
		{`not json \u0000`, ""}, // the validator words what is not JSON
		{"{\"a\":\"x\xff\"}", "a: must be valid UTF-8"},
		{"{\"a\":[1,{\"b\":\"\xc0\x80\"}]}", "a.1.b: must be valid UTF-8"},
		{"{\"m\":{\"\xff\":1}}", "m: must be valid UTF-8"},
		{`{"m":{"k\u0000":1}}`, "m: must not contain NUL characters"},
		{`{"a":"\u0000"}`, "a: must not contain NUL characters"},
		{`["x","\ud800"]`, "1: must be valid UTF-8 (an escaped surrogate without its pair)"},
		{`{"a":"\udc00\ud800"}`, "a: must be valid UTF-8 (an escaped surrogate without its pair)"},
		{`{"a":"\ud800\u0041"}`, "a: must be valid UTF-8 (an escaped surrogate without its pair)"},
		{`{"a":"\uD83D"}`, "a: must be valid UTF-8 (an escaped surrogate without its pair)"},
		{`"\u0000"`, "body: must not contain NUL characters"},
		{"\xff", "body: must be valid UTF-8"},
		{`{"a":{"b":{"c":[true,null,1.5,"ok"]}},"d":"\u0000"}`, "d: must not contain NUL characters"},
	} {
		err := JSONTextProblem([]byte(tc.body))
		if tc.want == "" {
			require.Nil(t, err, "%q", tc.body)
			continue
		}
		require.NotNil(t, err, "%q", tc.body)
		require.Equal(t, tc.want, err.Message, "%q", tc.body)
	}
}

// The parameters' rule: path, query (names and values) and the operation's declared headers.
func TestParamTextProblem(t *testing.T) {
	spec, err := api.GetSwagger()
	require.NoError(t, err)
	v := NewValidator(spec)
	r := v.routes["POST /20210201/queues/:queueId/messages"]
	require.Contains(t, r.headers, headerParam{name: "opc-request-id", key: "Opc-Request-Id"})
	check := func(target string, params gin.Params, header ...string) string {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest(http.MethodPost, target, nil)
		c.Params = params
		for i := 0; i+1 < len(header); i += 2 {
			c.Request.Header.Set(header[i], header[i+1])
		}
		if err := paramTextProblem(c, r.headers); err != nil {
			return err.Message
		}
		return ""
	}
	ok := gin.Params{{Key: "queueId", Value: testQueue}}
	require.Empty(t, check("/?limit=32&timeoutInSeconds=20", ok))
	require.Empty(t, check("/?name=%C3%A9&x=%2F", ok))
	require.Equal(t, "queueId: must not contain NUL characters", check("/", gin.Params{{Key: "queueId", Value: "a\x00"}}))
	require.Equal(t, "name: must be valid UTF-8", check("/?name=%FF", ok))
	require.Equal(t, "name: must not contain NUL characters", check("/?a=1&name=x%00", ok))
	require.Equal(t, "query: a parameter name must be valid UTF-8", check("/?%FF=1", ok))
	require.Equal(t, "opc-request-id: must be valid UTF-8", check("/", ok, "opc-request-id", "\xfe"))
	require.Empty(t, check("/", ok, "X-Other", "\xfe"), "headers the operation does not declare are not read")
}

// The rule's cost on the data plane's hot requests (compare with BenchmarkValidateGetMessagesParams and
// BenchmarkValidatePutMessages, the validator's whole work).
func BenchmarkParamTextProblem(b *testing.B) {
	spec, err := api.GetSwagger()
	require.NoError(b, err)
	v := NewValidator(spec)
	r := v.routes["GET /20210201/queues/:queueId/messages"]
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodGet, "/?limit=32&timeoutInSeconds=1", nil)
	c.Request.Header.Set("opc-request-id", strings.Repeat("r", 32))
	c.Params = gin.Params{{Key: "queueId", Value: testQueue}}
	b.ReportAllocs()
	for b.Loop() {
		if paramTextProblem(c, r.headers) != nil {
			b.Fatal("refused")
		}
	}
}
