package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/services/wire"
)

const testQueue = "ocid1.queue.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// fastOps are the operations with a fast decoder: method, path and a decoder of the body into the handler's type.
var fastOps = []struct {
	operation, method, path string
	decode                  func([]byte) (any, error)
}{
	{"PutMessages", http.MethodPost, "/20210201/queues/" + testQueue + "/messages", decodePutEntries},
	{"DeleteMessages", http.MethodPost, "/20210201/queues/" + testQueue + "/messages/actions/deleteMessages", decodeAs[api.DeleteMessagesDetails]},
	{"DeleteAndGetMessages", http.MethodPost, "/20210201/queues/" + testQueue + "/messages/actions/deleteAndGetMessages", decodeAs[api.DeleteMessagesDetails]},
	{"UpdateMessages", http.MethodPost, "/20210201/queues/" + testQueue + "/messages/actions/updateMessages", decodeAs[api.UpdateMessagesDetails]},
	{"UpdateMessage", http.MethodPut, "/20210201/queues/" + testQueue + "/messages/some-receipt", decodeAs[api.UpdateMessageDetails]},
}

// decodePutEntries is the PutMessages handler's own decoding of a body the validator did not decode.
func decodePutEntries(b []byte) (any, error) {
	var body api.PutMessagesDetails
	err := json.Unmarshal(b, &body)
	entries := wire.PutEntries(body)
	return &entries, err
}

func decodeAs[T any](b []byte) (any, error) {
	v := new(T)
	err := json.Unmarshal(b, v)
	return v, err
}

// validatorEngine serves the hot operations behind the validator; the handler answers 200 with "fast" or "kin"
// depending on the path the body took, and stores the fast path's body in *decoded.
func validatorEngine(t testing.TB, fast bool, decoded *any) *gin.Engine {
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	v := NewValidator(spec)
	v.noFastPath = !fast
	r := gin.New()
	r.Use(BodyLimit(func(*gin.Context) int64 { return 2 << 20 }), v.Middleware())
	handler := func(c *gin.Context) {
		if body, ok := c.Get(decodedBodyKey); ok {
			*decoded = body
			c.String(http.StatusOK, "fast")
			return
		}
		*decoded = nil
		c.String(http.StatusOK, "kin")
	}
	r.POST("/20210201/queues/:queueId/messages", handler)
	r.POST("/20210201/queues/:queueId/messages/actions/deleteMessages", handler)
	r.POST("/20210201/queues/:queueId/messages/actions/updateMessages", handler)
	r.PUT("/20210201/queues/:queueId/messages/:messageReceipt", handler)
	return r
}

type differ struct {
	fast, kin                 *gin.Engine
	fastDecoded, kinDecoded   any
	fastAccepted, kinAccepted int
}

func newDiffer(t testing.TB) *differ {
	d := &differ{}
	d.fast = validatorEngine(t, true, &d.fastDecoded)
	d.kin = validatorEngine(t, false, &d.kinDecoded)
	return d
}

func serve(e *gin.Engine, method, path, contentType, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	return w
}

// check sends body to operation op through both validators: the answers must be the same, and a body the fast
// path took must decode to what the handler's own decoding of it gives.
func (d *differ) check(t testing.TB, op int, contentType, body string) {
	t.Helper()
	o := fastOps[op]
	fw := serve(d.fast, o.method, o.path, contentType, body)
	kw := serve(d.kin, o.method, o.path, contentType, body)
	fastTook := fw.Code == http.StatusOK && fw.Body.String() == "fast"
	if fastTook {
		d.fastAccepted++
		if kw.Code != http.StatusOK {
			t.Fatalf("%s %q: the fast path accepted a body kin-openapi refuses: %d %s", o.operation, body, kw.Code, kw.Body)
		}
		want, err := o.decode([]byte(body))
		if err != nil {
			t.Fatalf("%s %q: accepted, but encoding/json fails: %v", o.operation, body, err)
		}
		if !reflect.DeepEqual(d.fastDecoded, want) {
			t.Fatalf("%s %q: decoded\n%#v\nencoding/json\n%#v", o.operation, body, d.fastDecoded, want)
		}
		return
	}
	if kw.Code == http.StatusOK {
		d.kinAccepted++
		if testing.Verbose() {
			t.Logf("only kin-openapi accepted %s %q (%s)", o.operation, trim(body), contentType)
		}
	}
	if fw.Code != kw.Code || fw.Body.String() != kw.Body.String() {
		t.Fatalf("%s %q: fast path answered %d %s, kin-openapi %d %s", o.operation, body, fw.Code, fw.Body, kw.Code, kw.Body)
	}
}

func trim(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// fastBodyCorpus: valid bodies of every shape, and the bad inputs of tests/dataplane_badinput_test.go and more.
func fastBodyCorpus() []struct {
	op   int
	body string
} {
	type c = struct {
		op   int
		body string
	}
	entries := func(list ...string) string { return `{"messages":[` + strings.Join(list, ",") + `]}` }
	repeat := func(s string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	attrs := func(n int) string {
		var kv []string
		for i := range n {
			kv = append(kv, fmt.Sprintf(`"k%d":"v"`, i))
		}
		return `{"content":"x","attributes":{` + strings.Join(kv, ",") + `}}`
	}
	custom := func(n int) string {
		var kv []string
		for i := range n {
			kv = append(kv, fmt.Sprintf(`"c%d":"v"`, i))
		}
		return `{"content":"x","metadata":{"customProperties":{` + strings.Join(kv, ",") + `}}}`
	}
	withCustom := func(props string) string {
		return entries(`{"content":"x","metadata":{"customProperties":` + props + `}}`)
	}
	ok := `{"content":"fine"}`
	out := []c{}
	for _, b := range []string{
		entries(ok), entries(repeat(ok, 20)...), entries(repeat(ok, 21)...), entries(), `{}`, `{"messages":null}`, `[]`, `null`, ``, ` `,
		entries(ok) + ` `, entries(ok) + `x`, entries(ok) + `{}`, `{"messages":[`, `{"messages":{"content":"x"}}`,
		` { "messages" : [ { "content" : "spaced" , "attributes" : { "a" : 1 , "b" : "two" } } ] } `,
		entries(`{"content":"x","attributes":{"n":-1.5e3,"m":0,"o":1E+2,"p":0.25,"q":-0,"r":12345678901234567890}}`),
		entries(`{"content":"x","attributes":{"big":1e400}}`), entries(`{"content":"x","attributes":{"lead":01}}`),
		entries(`{"content":"x","attributes":{"dot":1.}}`), entries(`{"content":"x","attributes":{"minus":-}}`),
		entries(`{"content":"x","attributes":{}}`), entries(attrs(32)), entries(attrs(33)),
		entries(`{"content":"x","attributes":{"a":"1","a":"2"}}`), entries(`{"content":"x","attributes":{"flag":true}}`),
		entries(`{"content":"x","attributes":{"obj":{"a":1}}}`), entries(`{"content":"x","attributes":{"nil":null}}`),
		entries(`{"content":"x","attributes":{"list":["a"]}}`), entries(`{"content":"x","attributes":null}`),
		entries(`{"content":"x","attributes":{"long":"` + strings.Repeat("v", 256) + `"}}`),
		entries(`{"content":"x","attributes":{"long":"` + strings.Repeat("v", 257) + `"}}`),
		entries(`{"content":"x","attributes":{"long":"` + strings.Repeat("é", 256) + `"}}`),
		entries(`{"content":"x","attributes":{"long":"` + strings.Repeat("é", 257) + `"}}`),
		entries(`{"content":"x","attributes":{"` + strings.Repeat("k", 65) + `":"v"}}`), entries(`{"content":"x","attributes":{"":"v"}}`),
		entries(`{"content":""}`), entries(`{"content":42}`), entries(`{"attributes":{}}`), entries(`{"content":"a","content":"b"}`),
		entries(`{"content":"` + strings.Repeat("é", 140000) + `"}`), entries(`{"content":"` + strings.Repeat("x", 262144) + `"}`),
		entries(`{"content":"` + strings.Repeat("x", 262145) + `"}`), entries(`{"content":"` + strings.Repeat("€", 262144) + `"}`),
		entries(`{"content":"` + strings.Repeat("€", 262145) + `"}`),
		entries(`{"content":"esc\"aped\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`), entries(`{"content":"bad \x escape"}`),
		entries(`{"content":"a\u0000b"}`), entries(`{"content":"lone \ud800 surrogate"}`), entries("{\"content\":\"raw \xff byte\"}"),
		entries("{\"content\":\"raw \x01 control\"}"), entries(`{"content":"tab	raw"}`), entries(`{"content":"unterminated}]}`),
		entries(`{"content":"x","attributes":{"k\u0000":"v"}}`), entries(`{"content":"x","attributes":{"k":"v\u0000"}}`),
		entries(`{"content":"x","metadata":{}}`), entries(`{"content":"x","metadata":null}`),
		entries(`{"content":"x","metadata":{"channelId":"c","messageGroupId":"g","deduplicationId":"d","traceparent":"","delayInSeconds":0}}`),
		entries(`{"content":"x","metadata":{"delayInSeconds":900}}`), entries(`{"content":"x","metadata":{"delayInSeconds":901}}`),
		entries(`{"content":"x","metadata":{"delayInSeconds":-1}}`), entries(`{"content":"x","metadata":{"delayInSeconds":-0}}`),
		entries(`{"content":"x","metadata":{"delayInSeconds":1.5}}`), entries(`{"content":"x","metadata":{"delayInSeconds":1.0}}`),
		entries(`{"content":"x","metadata":{"delayInSeconds":1e2}}`), entries(`{"content":"x","metadata":{"delayInSeconds":"1"}}`),
		entries(`{"content":"x","metadata":{"delayInSeconds":007}}`), entries(`{"content":"x","metadata":{"delayInSeconds":99999999999999999999}}`),
		entries(`{"content":"x","metadata":{"channelId":"a*"}}`), entries(`{"content":"x","metadata":{"channelId":"*"}}`),
		entries(`{"content":"x","metadata":{"channelId":"a\nb"}}`), entries(`{"content":"x","metadata":{"channelId":""}}`),
		// OCI's SDK sends null for the default channel.
		entries(`{"content":"x","metadata":{"channelId":null}}`), entries(`{"content":"x","metadata":{"channelId": null ,"traceparent":""}}`),
		entries(`{"content":"x","metadata":{"channelId":nul}}`), entries(`{"content":"x","metadata":{"channelId":nullx}}`),
		entries(`{"content":"x","metadata":{"channelId":null,"channelId":"a"}}`), entries(`{"content":"x","metadata":{"channelId":null1}}`),
		entries(`{"content":"x","metadata":{"messageGroupId":null}}`),
		entries(`{"content":"x","metadata":{"channelId":"` + strings.Repeat("c", 256) + `"}}`),
		entries(`{"content":"x","metadata":{"channelId":"` + strings.Repeat("c", 257) + `"}}`),
		entries(`{"content":"x","metadata":{"deduplicationId":"` + strings.Repeat("d", 129) + `"}}`),
		entries(`{"content":"x","metadata":{"messageGroupId":""}}`), entries(`{"content":"x","metadata":{"traceparent":"` + strings.Repeat("t", 129) + `"}}`),
		entries(`{"content":"x","metadata":{"channelId":"c\u0000"}}`), entries(`{"content":"x","metadata":{"deduplicationId":"d\u0000"}}`),
		entries(`{"content":"x","metadata":{"bogus":1}}`), entries(`{"content":"x","metadata":{"channelId":"a","channelId":"b"}}`),
		`{"messages":[{"content":"x"}],"extra":1}`, entries(ok, `{"content":"x","bogus":1}`), `{"Messages":[{"content":"x"}]}`,
		entries(`{"Content":"x"}`), `{"messages":[{"content":"x"}],"messages":[{"content":"y"}]}`, entries(ok + `,`), entries(`,` + ok),
		`{"messages":[{"content":"x"},]}`, `{"messages":[{"content":"x",}]}`, "\ufeff" + entries(ok),
		// OCI's metadata: channelId "" (the default channel) and customProperties.
		entries(`{"content":"x","metadata":{"channelId":"","customProperties":{"region":"eu","tier":"gold"}}}`),
		entries(`{"content":"x","attributes":{"n":1},"metadata":{"customProperties":{"region":"eu"},"channelId":"c"}}`),
		entries(`{"content":"x","attributes":{"k":"a"},"metadata":{"customProperties":{"k":"b"}}}`), // a clash: the service's to refuse
		withCustom(`{}`), withCustom(`null`), withCustom(`{"n":1}`), withCustom(`{"b":true}`), withCustom(`{"o":{"a":"b"}}`),
		withCustom(`{"l":["a"]}`), withCustom(`{"z":null}`), withCustom(`{"a":"1","a":"2"}`), withCustom(`{"":"v"}`),
		withCustom(`{"` + strings.Repeat("k", 65) + `":"v"}`), withCustom(`{"e":""}`), withCustom(`"flat"`), withCustom(`[]`),
		withCustom(`{"long":"` + strings.Repeat("v", 256) + `"}`), withCustom(`{"long":"` + strings.Repeat("v", 257) + `"}`),
		withCustom(`{"long":"` + strings.Repeat("é", 256) + `"}`), withCustom(`{"long":"` + strings.Repeat("é", 257) + `"}`),
		withCustom(`{"k\u0000":"v"}`), withCustom(`{"k":"v\u0000"}`), withCustom(`{"k":"esc\"aped\u00e9"}`),
		withCustom("{\"k\":\"raw \xff byte\"}"), entries(custom(32)), entries(custom(33)),
		entries(`{"content":"x","metadata":{"customProperties":{"a":"1"},"customProperties":{"b":"2"}}}`),
	} {
		out = append(out, c{0, b})
	}
	deletes := func(list ...string) string { return `{"entries":[` + strings.Join(list, ",") + `]}` }
	for _, b := range []string{
		deletes(`{"receipt":"r"}`), deletes(repeat(`{"receipt":"r"}`, 32)...), deletes(repeat(`{"receipt":"r"}`, 33)...), deletes(),
		deletes(`{"receipt":""}`), deletes(`{"receipt":"r","x":1}`), deletes(`{}`), deletes(`{"receipt":1}`), `{}`, `{"entries":null}`,
		deletes(`{"receipt":"` + strings.Repeat("r", 1024) + `"}`), deletes(`{"receipt":"` + strings.Repeat("r", 1025) + `"}`),
		deletes(`{"receipt":"a","receipt":"b"}`), deletes(`{"receipt":"r\u0000"}`), `{"entries":[{"receipt":"r"}],"x":1}`,
	} {
		out = append(out, c{1, b})
	}
	for _, b := range []string{
		deletes(`{"receipt":"r","visibilityInSeconds":0}`), deletes(repeat(`{"receipt":"r","visibilityInSeconds":43200}`, 32)...), deletes(repeat(`{"receipt":"r","visibilityInSeconds":0}`, 33)...),
		deletes(repeat(`{"receipt":"r","visibilityInSeconds":1}`, 21)...), deletes(`{"receipt":"r","visibilityInSeconds":43201}`),
		deletes(`{"receipt":"r"}`), deletes(`{"visibilityInSeconds":1}`), deletes(`{"receipt":"","visibilityInSeconds":1}`),
		deletes(`{"receipt":"r","visibilityInSeconds":-1}`), deletes(`{"receipt":"r","visibilityInSeconds":1,"x":1}`), deletes(),
		deletes(`{"receipt":"r","visibilityInSeconds":1,"visibilityInSeconds":2}`),
	} {
		out = append(out, c{2, b})
	}
	for _, b := range []string{
		`{"visibilityInSeconds":0}`, `{"visibilityInSeconds":43200}`, `{"visibilityInSeconds":43201}`, `{}`, `{"visibilityInSeconds":1,"x":1}`,
		`{"visibilityInSeconds":"1"}`, `{"visibilityInSeconds":1.5}`, `{"visibilityInSeconds":null}`, `[]`,
	} {
		out = append(out, c{3, b})
	}
	return out
}

// TestFastBodies: for every body of the corpus, with every content type, the fast path and kin-openapi answer the
// same, and what the fast path accepts decodes as encoding/json decodes it.
func TestFastBodies(t *testing.T) {
	d := newDiffer(t)
	for _, tc := range fastBodyCorpus() {
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "text/plain", "", "application/merge-patch+json"} {
			d.check(t, tc.op, ct, tc.body)
		}
	}
	if d.fastAccepted < 40 {
		t.Fatalf("the fast path took only %d bodies", d.fastAccepted)
	}
	t.Logf("fast path took %d bodies; kin-openapi alone accepted %d more", d.fastAccepted, d.kinAccepted)
}

// FuzzFastBodies checks the fast decoders against kin-openapi on arbitrary bodies.
func FuzzFastBodies(f *testing.F) {
	for _, tc := range fastBodyCorpus() {
		if len(tc.body) < 4096 {
			f.Add(tc.op, tc.body)
		}
	}
	d := newDiffer(f)
	f.Fuzz(func(t *testing.T, op int, body string) {
		if op < 0 {
			op = -op
		}
		d.check(t, op%len(fastOps), "application/json", body)
	})
}

// BenchmarkValidatePutMessages: a batch of 20 × 1 KiB through the validator, fast path against kin-openapi.
func BenchmarkValidatePutMessages(b *testing.B) {
	entry := `{"content":"` + strings.Repeat("x", 1024) + `"}`
	body := `{"messages":[` + strings.TrimSuffix(strings.Repeat(entry+",", 20), ",") + `]}`
	for _, fast := range []bool{true, false} {
		b.Run(map[bool]string{true: "fast", false: "kin"}[fast], func(b *testing.B) {
			var decoded any
			e := validatorEngine(b, fast, &decoded)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if w := serve(e, http.MethodPost, fastOps[0].path, "application/json", body); w.Code != http.StatusOK {
					b.Fatal(w.Code, w.Body)
				}
			}
		})
	}
}

// TestReadAll: a body of announced length reads whole; a short one fails like io.ReadAll; a longer one reads whole.
func TestReadAll(t *testing.T) {
	body := strings.Repeat("b", 1000)
	for _, c := range []struct {
		length int64
		want   string
		fails  bool
	}{{1000, body, false}, {-1, body, false}, {0, body, false}, {999, body, false}, {1001, body, true}} {
		got, err := readAll(strings.NewReader(body), c.length)
		if (err != nil) != c.fails || !c.fails && string(got) != c.want {
			t.Errorf("length %d: %d bytes, %v", c.length, len(got), err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body[:10]))
	req.ContentLength = 20
	if _, err := readAll(req.Body, req.ContentLength); err == nil {
		t.Error("a body shorter than its Content-Length was read without an error")
	}
}
