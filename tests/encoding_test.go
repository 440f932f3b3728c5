package tests

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestEncodingBadInput: text PostgreSQL cannot store (invalid UTF-8, NUL) answers 400 InvalidParameter naming the
// parameter wherever it is sent — query filters, path ids, page tokens, JSON strings — never a 500 from the
// database, and never silently stored with U+FFFD in place of what was sent.
func TestEncodingBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.Token(t, tenancyID, "admin", "Administrators")
	q := c.NewQueue(t, tenancyID)
	c.Put(t, q, e2e.MsgOn("a", "ch-a"), e2e.MsgOn("b", "ch-b"))
	in := "?compartmentId=" + tenancyID
	qPath := "/20210201/queues/" + q
	forged := func(cursor string) string { return base64.RawURLEncoding.EncodeToString([]byte(cursor)) }

	for _, tc := range []struct {
		name, path, field string
	}{
		{"queue displayName", "/20210201/queues" + in + "&displayName=%FF", "displayName"},
		{"queue displayName, truncated sequence", "/20210201/queues" + in + "&displayName=a%E2%82", "displayName"},
		{"compartment name", "/20210201/compartments" + in + "&name=%FF", "name"},
		{"compartment name NUL", "/20210201/compartments" + in + "&name=a%00", "name"},
		{"identity compartment name", "/20160918/compartments" + in + "&name=%C0%80", "name"},
		{"policy name", "/20210201/policies" + in + "&name=%FF", "name"},
		{"policy name NUL", "/20210201/policies" + in + "&name=%00", "name"},
		{"consumer group displayName", "/20210201/consumerGroups?queueId=" + q + "&displayName=%FF", "displayName"},
		{"stats channelId", qPath + "/stats?channelId=%FF", "channelId"},
		{"stats channelId NUL", qPath + "/stats?channelId=%00", "channelId"},
		{"messages channelFilter", qPath + "/messages?timeoutInSeconds=0&channelFilter=%FF", "channelFilter"},
		{"channels channelFilter", qPath + "/channels?channelFilter=%FF", "channelFilter"},
		{"channels channelFilter NUL", qPath + "/channels?channelFilter=a%00*", "channelFilter"},
		{"channels page of NULs", qPath + "/channels?page=AAAA", "page"},
		{"channels page of invalid UTF-8", qPath + "/channels?page=" + forged("\xff\xfe"), "page"},
		{"channels page itself invalid UTF-8", qPath + "/channels?page=%FF", "page"},
		{"queue page with a NUL name", "/20210201/queues" + in + "&sortBy=displayName&page=" + forged(`{"n":"\u0000","i":"x","s":"name:asc"}`), "page"},
		{"queue page with a NUL id", "/20210201/queues" + in + "&page=" + forged(`{"t":"2020-01-01T00:00:00Z","i":"\u0000","s":"time:asc"}`), "page"},
		{"an unknown query parameter", "/20210201/queues" + in + "&%FF=1", "query"},
		{"a queue id in the path", "/20210201/queues/%FF", "queueId"},
		{"a receipt in the path", qPath + "/messages/%FF%FE", "messageReceipt"},
		{"a consumer id in the path", qPath + "/consumers/%FF", "consumerId"},
		{"a policy id in the path", "/20210201/policies/%00", "policyId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodGet
			if strings.Contains(tc.path, "/consumers/") || strings.Contains(tc.path, "/messages/%") {
				method = http.MethodDelete
			}
			r := srv.Raw(t, token, method, tc.path, "", nil)
			e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", tc.field)
		})
	}

	t.Run("headers", func(t *testing.T) {
		// The retry token is stored: each create with an invalid one answered 500 (found by tests/fuzz).
		for _, create := range []struct{ path, body string }{
			{"/20210201/queues", `{"compartmentId":"` + tenancyID + `","displayName":"h"}`},
			{"/20210201/compartments", `{"compartmentId":"` + tenancyID + `","name":"h"}`},
			{"/20160918/compartments", `{"compartmentId":"` + tenancyID + `","name":"h","description":"d"}`},
			{"/20210201/policies", `{"compartmentId":"` + tenancyID + `","name":"h","description":"d","statements":["Allow group G to read queues in tenancy"]}`},
		} {
			for _, h := range []string{"opc-retry-token", "opc-request-id"} {
				r := srv.Raw(t, token, http.MethodPost, create.path, "application/json", strings.NewReader(create.body), h, "tok\xfe")
				e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", h)
			}
		}
		r := srv.Raw(t, token, http.MethodDelete, "/20210201/queues/"+q, "", nil, "if-match", "\xfe")
		e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "if-match")
	})

	// JSON bodies: raw invalid UTF-8 and lone surrogate escapes are refused, on the fast decoders and the general path.
	for _, tc := range []struct {
		name, method, path, body, field string
	}{
		{"put content", "POST", qPath + "/messages", "{\"messages\":[{\"content\":\"a\xffb\"}]}", "messages.0.content"},
		{"put content with escapes", "POST", qPath + "/messages", "{\"messages\":[{\"content\":\"\\n\\\"a\xff\"}]}", "messages.0.content"},
		{"put channel", "POST", qPath + "/messages", "{\"messages\":[{\"content\":\"x\",\"metadata\":{\"channelId\":\"\xc0\x80\"}}]}", "messages.0.metadata.channelId"},
		{"put attribute key", "POST", qPath + "/messages", "{\"messages\":[{\"content\":\"x\",\"attributes\":{\"\xff\":\"v\"}}]}", "messages.0.attributes"},
		{"put lone surrogate", "POST", qPath + "/messages", "{\"messages\":[{\"content\":\"\\ud800\"}]}", "messages.0.content"},
		{"put low surrogate first", "POST", qPath + "/messages", "{\"messages\":[{\"content\":\"\\udc00\\ud800\"}]}", "messages.0.content"},
		{"put custom property", "POST", qPath + "/messages", "{\"messages\":[{\"content\":\"x\",\"metadata\":{\"customProperties\":{\"k\":\"\xed\xa0\x80\"}}}]}", "messages.0.metadata.customProperties.k"},
		{"delete receipt", "POST", qPath + "/messages/actions/deleteMessages", "{\"entries\":[{\"receipt\":\"\xff\"}]}", "entries.0.receipt"},
		{"queue displayName", "POST", "/20210201/queues", "{\"compartmentId\":\"" + tenancyID + "\",\"displayName\":\"q\xff\"}", "displayName"},
		{"queue tag", "PUT", qPath, "{\"freeformTags\":{\"k\":\"\xff\"}}", "freeformTags.k"},
		{"compartment description", "POST", "/20210201/compartments", "{\"compartmentId\":\"" + tenancyID + "\",\"name\":\"x\",\"description\":\"\\ud83d\"}", "description"},
		{"policy statement", "POST", "/20210201/policies", "{\"compartmentId\":\"" + tenancyID + "\",\"name\":\"p\",\"description\":\"d\",\"statements\":[\"Allow group \xff to manage queues in tenancy\"]}", "statements.0"},
		{"consumer group filter", "POST", "/20210201/consumerGroups", "{\"queueId\":\"" + q + "\",\"displayName\":\"g\",\"filter\":\"a = '\xff'\"}", "filter"},
	} {
		t.Run("body "+tc.name, func(t *testing.T) {
			r := srv.Raw(t, token, tc.method, tc.path, "application/json", strings.NewReader(tc.body))
			e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", tc.field, "UTF-8")
		})
	}

	// What is valid stays valid: a surrogate pair, a literal U+FFFD, non-ASCII text in filters.
	for _, tc := range []struct{ name, method, path, body string }{
		{"surrogate pair", "POST", qPath + "/messages", `{"messages":[{"content":"\ud83d\ude00 \\ud800"}]}`},
		{"literal replacement character", "POST", qPath + "/messages", `{"messages":[{"content":"\ufffd �"}]}`},
		{"non-ASCII channel filter", "GET", qPath + "/channels?channelFilter=" + url.QueryEscape("очередь*"), ""},
		{"non-ASCII name filter", "GET", "/20210201/compartments" + in + "&name=" + url.QueryEscape("ü"), ""},
	} {
		var r testserver.RawResponse
		if tc.body == "" {
			r = srv.Raw(t, token, tc.method, tc.path, "", nil)
		} else {
			r = srv.Raw(t, token, tc.method, tc.path, "application/json", strings.NewReader(tc.body))
		}
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", tc.name, r.Body)
	}
	got := c.Get(t, q, e2e.Limit(10))
	var contents []string
	for _, m := range got {
		contents = append(contents, m.Content)
	}
	require.Contains(t, contents, "\U0001F600 \\ud800", "a surrogate pair is decoded, an escaped backslash is not an escape")
}
