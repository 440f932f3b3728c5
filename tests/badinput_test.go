package tests

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestBadInput sends the control plane what the SDK would never send. Every answer must be a 4xx with the JSON
// error body whose code is the documented one and whose message names the offending field; never a 500, never a
// dropped connection. Nothing may be written by a rejected request.
func TestBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	token := srv.Token(t, tenancyID, "admin", "Administrators")
	comp := client.NewCompartment(t, tenancyID, "comp")
	queue := client.NewNamedQueue(t, comp.Id, "queue")
	_, queueEtag := client.QueueWithETag(t, queue.Id)
	_, compEtag := client.CompartmentWithETag(t, comp.Id)

	const (
		jsonType = "application/json"
		qs       = "/20210201/queues"
		cs       = "/20210201/compartments"
		ws       = "/20210201/workRequests"
	)
	qPath := qs + "/" + queue.Id
	cPath := cs + "/" + comp.Id
	in := "?compartmentId=" + tenancyID
	validQueue := func(extra string) string {
		return `{"compartmentId":"` + tenancyID + `","displayName":"x"` + extra + `}`
	}
	validCompartment := func(extra string) string {
		return `{"compartmentId":"` + tenancyID + `","name":"x"` + extra + `}`
	}
	long := strings.Repeat("n", 256)
	oversized := `{"compartmentId":"` + tenancyID + `","displayName":"` + strings.Repeat("a", 1<<20) + `"}`

	type badCase struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		headers     []string
		status      int
		code        string
		fields      []string // fragments the message must contain
		chunked     bool     // send the body without a Content-Length
	}
	invalid := func(name, method, path, body string, fields ...string) badCase {
		return badCase{name: name, method: method, path: path, contentType: jsonType, body: body,
			status: http.StatusBadRequest, code: "InvalidParameter", fields: fields}
	}
	missing := func(name, method, path, body string, fields ...string) badCase {
		c := invalid(name, method, path, body, fields...)
		c.code = "MissingParameter"
		return c
	}
	query := func(name, path string, fields ...string) badCase {
		return badCase{name: name, method: http.MethodGet, path: path, status: http.StatusBadRequest, code: "InvalidParameter", fields: fields}
	}
	withHeaders := func(c badCase, headers ...string) badCase { c.headers = headers; return c }
	tooLarge := func(name, method, path string, chunked bool, headers ...string) badCase {
		return badCase{name: name, method: method, path: path, contentType: jsonType, body: oversized, headers: headers,
			status: http.StatusRequestEntityTooLarge, code: "PayloadTooLarge", chunked: chunked}
	}

	cases := []badCase{
		// Malformed JSON.
		invalid("truncated object", http.MethodPost, qs, `{`, "body"),
		invalid("truncated compartment", http.MethodPost, cs, `{"name":`, "body"),
		invalid("not JSON", http.MethodPut, qPath, `displayName=x`, "body"),
		invalid("trailing garbage", http.MethodPost, qs, validQueue("")+`x`, "body", "not valid JSON"),
		invalid("two objects", http.MethodPost, qs, validQueue("")+validQueue(""), "body"),
		invalid("trailing garbage on update", http.MethodPut, cPath, `{"description":"d"}]`, "body"),
		invalid("array body", http.MethodPost, qs, `[]`, "body"),
		invalid("null body", http.MethodPost, qs, `null`, "body"),
		invalid("string body", http.MethodPost, cs, `"x"`, "body"),
		invalid("invalid UTF-8", http.MethodPost, qs, "\xff\xfe", "body"),
		missing("empty body", http.MethodPost, qs, ``, "body"),
		missing("empty update body", http.MethodPut, qPath, ``, "body"),

		// Wrong types.
		invalid("displayName number", http.MethodPost, qs, `{"compartmentId":"`+tenancyID+`","displayName":5}`, "displayName"),
		invalid("retention string", http.MethodPost, qs, validQueue(`,"retentionInSeconds":"10"`), "retentionInSeconds"),
		invalid("retention fraction", http.MethodPost, qs, validQueue(`,"retentionInSeconds":10.5`), "retentionInSeconds"),
		invalid("maxSize huge", http.MethodPost, qs, validQueue(`,"maxSizeInBytes":1e40`), "maxSizeInBytes"),
		invalid("visibility bool", http.MethodPut, qPath, `{"visibilityInSeconds":true}`, "visibilityInSeconds"),
		invalid("tags not an object", http.MethodPost, qs, validQueue(`,"freeformTags":"x"`), "freeformTags"),
		invalid("tag value not a string", http.MethodPost, qs, validQueue(`,"freeformTags":{"a":1}`), "freeformTags.a"),
		invalid("compartment name bool", http.MethodPost, cs, `{"compartmentId":"`+tenancyID+`","name":true}`, "name"),
		invalid("description array", http.MethodPut, cPath, `{"description":[]}`, "description"),
		invalid("purgeType number", http.MethodPost, qPath+"/actions/purge", `{"purgeType":1}`, "purgeType"),
		invalid("compartmentId number", http.MethodPost, qPath+"/actions/changeCompartment", `{"compartmentId":1}`, "compartmentId"),

		// Unknown fields.
		invalid("unknown queue field", http.MethodPost, qs, validQueue(`,"colour":"red"`), "colour"),
		invalid("retention on update", http.MethodPut, qPath, `{"retentionInSeconds":60}`, "retentionInSeconds"),
		invalid("read-only field on update", http.MethodPut, qPath, `{"lifecycleState":"DELETED"}`, "lifecycleState"),
		invalid("unknown compartment field", http.MethodPost, cs, validCompartment(`,"parent":"x"`), "parent"),
		invalid("unknown update field", http.MethodPut, cPath, `{"compartmentId":"`+tenancyID+`"}`, "compartmentId"),
		invalid("unknown move field", http.MethodPost, qPath+"/actions/changeCompartment", `{"compartmentId":"`+tenancyID+`","x":1}`, "x"),
		invalid("unknown purge field", http.MethodPost, qPath+"/actions/purge", `{"purgeType":"BOTH","now":true}`, "now"),

		// Missing required fields.
		missing("queue without displayName", http.MethodPost, qs, `{"compartmentId":"`+tenancyID+`"}`, "displayName"),
		missing("queue without compartmentId", http.MethodPost, qs, `{"displayName":"x"}`, "compartmentId"),
		missing("compartment without name", http.MethodPost, cs, `{"compartmentId":"`+tenancyID+`"}`, "name"),
		missing("purge without purgeType", http.MethodPost, qPath+"/actions/purge", `{}`, "purgeType"),
		missing("move without compartmentId", http.MethodPost, qPath+"/actions/changeCompartment", `{}`, "compartmentId"),
		missing("list compartments without compartmentId", http.MethodGet, cs, ``, "compartmentId"),

		// Empty and overlong names.
		invalid("empty displayName", http.MethodPost, qs, `{"compartmentId":"`+tenancyID+`","displayName":""}`, "displayName"),
		invalid("empty compartment name", http.MethodPost, cs, `{"compartmentId":"`+tenancyID+`","name":""}`, "name"),
		invalid("empty displayName on update", http.MethodPut, qPath, `{"displayName":""}`, "displayName"),
		invalid("empty name on update", http.MethodPut, cPath, `{"name":""}`, "name"),
		invalid("long displayName", http.MethodPost, qs, `{"compartmentId":"`+tenancyID+`","displayName":"`+long+`"}`, "displayName"),
		invalid("long compartment name", http.MethodPost, cs, `{"compartmentId":"`+tenancyID+`","name":"`+long+`"}`, "name"),
		invalid("long displayName on update", http.MethodPut, qPath, `{"displayName":"`+long+`"}`, "displayName"),
		invalid("long name on update", http.MethodPut, cPath, `{"name":"`+long+`"}`, "name"),
		invalid("compartment name with a space", http.MethodPost, cs, `{"compartmentId":"`+tenancyID+`","name":"a b"}`, "name"),
		invalid("long description", http.MethodPost, cs, validCompartment(`,"description":"`+strings.Repeat("d", 401)+`"`), "description"),

		// NUL characters, which PostgreSQL text cannot hold.
		invalid("NUL in displayName", http.MethodPost, qs, `{"compartmentId":"`+tenancyID+`","displayName":"a\u0000b"}`, "displayName", "NUL"),
		invalid("NUL in a tag value", http.MethodPost, qs, validQueue(`,"freeformTags":{"k":"\u0000"}`), "freeformTags.k", "NUL"),
		invalid("NUL in a tag key", http.MethodPost, qs, validQueue(`,"freeformTags":{"\u0000":"v"}`), "freeformTags", "NUL"),
		invalid("NUL in a description", http.MethodPost, cs, validCompartment(`,"description":"x\u0000"`), "description", "NUL"),
		invalid("NUL on update", http.MethodPut, qPath, `{"displayName":"\u0000"}`, "displayName", "NUL"),
		invalid("NUL on compartment update", http.MethodPut, cPath, `{"description":"\u0000"}`, "description", "NUL"),
		query("NUL in a query filter", qs+in+"&displayName=%00", "displayName", "NUL"),
		query("NUL in a name filter", cs+in+"&name=a%00", "name", "NUL"),

		// Invalid OCIDs in the path, the query and the body.
		query("queue id in path", qs+"/not-an-ocid", "queueId"),
		query("short queue id in path", qs+"/ocid1.queue.ferry.local.abc", "queueId"),
		query("uppercase queue id in path", qs+"/ocid1.queue.ferry.local."+strings.Repeat("A", 32), "queueId"),
		invalid("queue id in update path", http.MethodPut, qs+"/not-an-ocid", `{"displayName":"x"}`, "queueId"),
		invalid("queue id in delete path", http.MethodDelete, qs+"/not-an-ocid", ``, "queueId"),
		invalid("queue id in purge path", http.MethodPost, qs+"/not-an-ocid/actions/purge", `{"purgeType":"BOTH"}`, "queueId"),
		invalid("queue id in move path", http.MethodPost, qs+"/not-an-ocid/actions/changeCompartment", `{"compartmentId":"`+tenancyID+`"}`, "queueId"),
		query("compartment id in path", cs+"/not-an-ocid", "compartmentId"),
		invalid("compartment id in update path", http.MethodPut, cs+"/not-an-ocid", `{"name":"x"}`, "compartmentId"),
		invalid("compartment id in delete path", http.MethodDelete, cs+"/not-an-ocid", ``, "compartmentId"),
		query("work request id in path", ws+"/not-an-ocid", "workRequestId"),
		query("compartment id in queue list", qs+"?compartmentId=bad", "compartmentId"),
		query("compartment id in compartment list", cs+"?compartmentId=bad", "compartmentId"),
		query("compartment id in work request list", ws+"?compartmentId=bad", "compartmentId"),
		query("queue id filter", qs+in+"&id=bad", "id"),
		query("resource id filter", ws+in+"&resourceId=bad", "resourceId"),
		invalid("compartment id in queue body", http.MethodPost, qs, `{"compartmentId":"bad","displayName":"x"}`, "compartmentId", "regular expression"),
		invalid("compartment id in compartment body", http.MethodPost, cs, `{"compartmentId":"bad","name":"x"}`, "compartmentId"),
		invalid("compartment id in move body", http.MethodPost, qPath+"/actions/changeCompartment", `{"compartmentId":"bad"}`, "compartmentId"),

		// limit.
		query("limit zero", qs+in+"&limit=0", "limit"),
		query("limit negative", qs+in+"&limit=-1", "limit"),
		query("limit over 1000", qs+in+"&limit=1001", "limit"),
		query("limit huge", qs+in+"&limit=99999999999999999999999", "limit"),
		query("limit not a number", qs+in+"&limit=ten", "limit"),
		query("limit empty", qs+in+"&limit=", "limit"),
		query("compartment limit zero", cs+in+"&limit=0", "limit"),
		query("compartment limit huge", cs+in+"&limit=1000000", "limit"),
		query("work request limit negative", ws+in+"&limit=-5", "limit"),

		// Enumerations and other query values.
		query("queue sortBy", qs+in+"&sortBy=foo", "sortBy"),
		query("compartment sortBy", cs+in+"&sortBy=displayName", "sortBy"),
		query("sortOrder", qs+in+"&sortOrder=UP", "sortOrder"),
		query("lowercase sortOrder", cs+in+"&sortOrder=asc", "sortOrder"),
		query("queue lifecycleState", qs+in+"&lifecycleState=NOPE", "lifecycleState"),
		query("compartment lifecycleState", cs+in+"&lifecycleState=NOPE", "lifecycleState"),
		query("compartmentIdInSubtree", qs+in+"&compartmentIdInSubtree=maybe", "compartmentIdInSubtree"),
		query("page token", qs+in+"&page=bogus", "page"),
		query("empty page token", cs+in+"&page=", "page"),
		query("work request page token", ws+in+"&page=bogus", "page"),
		query("long name filter", cs+in+"&name="+strings.Repeat("n", 101), "name"),
		invalid("purgeType", http.MethodPost, qPath+"/actions/purge", `{"purgeType":"X"}`, "purgeType", "NORMAL"),
		invalid("purgeType lowercase", http.MethodPost, qPath+"/actions/purge", `{"purgeType":"normal"}`, "purgeType"),

		// Range checks on the body.
		invalid("retention too small", http.MethodPost, qs, validQueue(`,"retentionInSeconds":9`), "retentionInSeconds"),
		invalid("visibility negative", http.MethodPut, qPath, `{"visibilityInSeconds":-1}`, "visibilityInSeconds"),
		invalid("too many tags", http.MethodPost, qs, validQueue(`,"freeformTags":{`+manyTags(65)+`}`), "freeformTags"),

		// Headers.
		withHeaders(invalid("empty if-match", http.MethodPut, qPath, `{"displayName":"x"}`, "if-match"), "if-match", ""),
		withHeaders(invalid("long if-match", http.MethodDelete, qPath, ``, "if-match"), "if-match", strings.Repeat("e", 256)),
		withHeaders(invalid("long retry token", http.MethodPost, qs, validQueue(""), "opc-retry-token"), "opc-retry-token", strings.Repeat("r", 65)),
		withHeaders(invalid("long request id", http.MethodGet, qPath, ``, "opc-request-id"), "opc-request-id", strings.Repeat("r", 99)),

		// Bodies over 1 MiB.
		tooLarge("large create", http.MethodPost, qs, false),
		tooLarge("large create, chunked", http.MethodPost, qs, true),
		tooLarge("large create with retry token", http.MethodPost, qs, false, "opc-retry-token", "big"),
		tooLarge("large create with retry token, chunked", http.MethodPost, qs, true, "opc-retry-token", "big-chunked"),
		tooLarge("large compartment, chunked", http.MethodPost, cs, true),
		tooLarge("large update", http.MethodPut, qPath, false),
		tooLarge("large update, chunked", http.MethodPut, cPath, true),
		tooLarge("large purge, chunked", http.MethodPost, qPath+"/actions/purge", true),

		// Content types.
		{name: "text/plain", method: http.MethodPost, path: qs, contentType: "text/plain", body: validQueue(""),
			status: http.StatusBadRequest, code: "InvalidParameter", fields: []string{"content-type"}},
		{name: "no content type", method: http.MethodPost, path: qs, body: validQueue(""),
			status: http.StatusBadRequest, code: "InvalidParameter", fields: []string{"content-type"}},
		{name: "xml", method: http.MethodPut, path: qPath, contentType: "application/xml", body: `<queue/>`,
			status: http.StatusBadRequest, code: "InvalidParameter", fields: []string{"content-type"}},
		{name: "form", method: http.MethodPost, path: cs, contentType: "application/x-www-form-urlencoded", body: "name=x",
			status: http.StatusBadRequest, code: "InvalidParameter", fields: []string{"content-type"}},

		// Routes and methods.
		{name: "unknown route", method: http.MethodGet, path: "/20210201/nope", status: http.StatusNotFound, code: "NotAuthorizedOrNotFound", fields: []string{"/20210201/nope"}},
		{name: "unknown version", method: http.MethodGet, path: "/20990101/queues" + in, status: http.StatusNotFound, code: "NotAuthorizedOrNotFound"},
		{name: "unknown action", method: http.MethodPost, path: qPath + "/actions/explode", contentType: jsonType, body: `{}`, status: http.StatusNotFound, code: "NotAuthorizedOrNotFound"},
		{name: "wrong method on collection", method: http.MethodPatch, path: qs, status: http.StatusMethodNotAllowed, code: "MethodNotAllowed", fields: []string{"PATCH"}},
		{name: "delete a collection", method: http.MethodDelete, path: cs, status: http.StatusMethodNotAllowed, code: "MethodNotAllowed"},
		{name: "post to a resource", method: http.MethodPost, path: qPath, contentType: jsonType, body: `{}`, status: http.StatusMethodNotAllowed, code: "MethodNotAllowed"},
		{name: "get an action", method: http.MethodGet, path: qPath + "/actions/purge", status: http.StatusMethodNotAllowed, code: "MethodNotAllowed"},
		{name: "put a work request", method: http.MethodPut, path: ws + "/ocid1.workrequest.ferry.local." + strings.Repeat("a", 32), contentType: jsonType, body: `{}`, status: http.StatusMethodNotAllowed, code: "MethodNotAllowed"},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
				if tc.chunked {
					body = io.MultiReader(body) // hides the length: the client sends it chunked
				}
			}
			resp := srv.Raw(t, token, tc.method, tc.path, tc.contentType, body, tc.headers...)
			require.Equal(t, tc.status, resp.Status, "body: %s", resp.Body)
			require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"), "content type %q", resp.Header.Get("Content-Type"))
			e := e2e.RequireErrorBody(t, resp.Body, tc.code, tc.fields...)
			for _, f := range tc.fields { // the field is named once, not "displayName.displayName"
				require.NotContains(t, e.Message, f+"."+f)
			}
			require.NotEmpty(t, resp.Header.Get("opc-request-id"))
		})
	}

	// Nothing was written: the one queue and the one compartment are as they were.
	require.Equal(t, []string{queue.Id}, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), CompartmentIdInSubtree: e2e.Ptr(true)}))
	require.Equal(t, []string{comp.Id}, client.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: tenancyID, CompartmentIdInSubtree: e2e.Ptr(true)}))
	_, etag := client.QueueWithETag(t, queue.Id)
	require.Equal(t, queueEtag, etag)
	_, etag = client.CompartmentWithETag(t, comp.Id)
	require.Equal(t, compEtag, etag)
	wrs, err := client.ListWorkRequestsWithResponse(t.Context(), &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(comp.Id)})
	e2e.RequireStatus(t, wrs, err, http.StatusOK)
	require.Empty(t, e2e.Background(wrs.JSON200.Items))

	// The retry tokens of rejected requests were not used up.
	for _, tok := range []string{"big", "big-chunked"} {
		resp := srv.Raw(t, token, http.MethodPost, qs, jsonType, strings.NewReader(validQueue("")), "opc-retry-token", tok)
		require.Equal(t, http.StatusAccepted, resp.Status, "%s: %s", tok, resp.Body)
	}

	// And the server is still fine.
	require.Equal(t, http.StatusOK, srv.Raw(t, "", http.MethodGet, "/healthz", "", nil).Status)
}

// TestBadInputAccepted pins down the inputs that look odd but are valid, so that tightening validation does not
// reject them by accident.
func TestBadInputAccepted(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	token := srv.Token(t, tenancyID, "admin", "Administrators")
	queue := client.NewNamedQueue(t, tenancyID, "queue")

	for _, tc := range []struct {
		name, method, path, contentType, body string
	}{
		{"charset in the content type", http.MethodPost, "/20210201/queues", "application/json; charset=utf-8",
			`{"compartmentId":"` + tenancyID + `","displayName":"utf"}`},
		{"whitespace around the body", http.MethodPost, "/20210201/queues", "application/json",
			"\n\t {\"compartmentId\":\"" + tenancyID + "\",\"displayName\":\"ws\"} \n"},
		{"unicode display name", http.MethodPost, "/20210201/queues", "application/json",
			`{"compartmentId":"` + tenancyID + `","displayName":"очередь ✉"}`},
		{"a literal backslash-u0000 is not NUL", http.MethodPost, "/20210201/queues", "application/json",
			`{"compartmentId":"` + tenancyID + `","displayName":"\\u0000"}`},
		{"255-character display name", http.MethodPost, "/20210201/queues", "application/json",
			`{"compartmentId":"` + tenancyID + `","displayName":"` + strings.Repeat("x", 255) + `"}`},
		{"empty update", http.MethodPut, "/20210201/queues/" + queue.Id, "application/json", `{}`},
		{"limit 1000", http.MethodGet, "/20210201/queues?limit=1000&compartmentId=" + tenancyID, "", ""},
		{"limit 1", http.MethodGet, "/20210201/compartments?limit=1&compartmentId=" + tenancyID, "", ""},
		{"lowercase bool", http.MethodGet, "/20210201/queues?compartmentIdInSubtree=true&compartmentId=" + tenancyID, "", ""},
		// As in OCI, queue and work request lists need no compartment (then: the root compartment's, or the one named).
		{"queues without compartmentId", http.MethodGet, "/20210201/queues", "", ""},
		{"work requests without compartmentId", http.MethodGet, "/20210201/workRequests", "", ""},
	} {
		var body io.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		resp := srv.Raw(t, token, tc.method, tc.path, tc.contentType, body)
		want := http.StatusOK
		if tc.method != http.MethodGet { // creates and updates of queues answer 202 with their work request
			want = http.StatusAccepted
		}
		require.Equal(t, want, resp.Status, "%s: %s", tc.name, resp.Body)
	}
}

func manyTags(n int) string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = `"k` + strings.Repeat("x", i) + `":"v"`
	}
	return strings.Join(tags, ",")
}
