package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestDataPlaneBadInput sends the data plane what the SDK would not. Every answer is a 4xx with the JSON error
// body {"code","message"} naming the offending field — never a 500 — and a rejected batch writes nothing.
func TestDataPlaneBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.Token(t, tenancyID, "admin", "Administrators")
	q := c.NewQueue(t, tenancyID)
	messages := "/20210201/queues/" + q + "/messages"

	// entries renders a PutMessages body of the given entries (JSON objects).
	entries := func(list ...string) string { return `{"messages":[` + strings.Join(list, ",") + `]}` }
	repeat := func(entry string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = entry
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
	// 140,000 two-byte characters: within 262,144 characters, over 262,144 bytes.
	wide := `{"content":"` + strings.Repeat("é", 140000) + `"}`
	ok := `{"content":"fine"}`

	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
		contains                 []string
	}{
		{"empty batch", "POST", messages, entries(), 400, "InvalidParameter", []string{"messages"}},
		{"21 messages", "POST", messages, entries(repeat(ok, 21)...), 400, "InvalidParameter", []string{"messages"}},
		{"no messages field", "POST", messages, `{}`, 400, "MissingParameter", []string{"messages"}},
		{"messages not an array", "POST", messages, `{"messages":{"content":"x"}}`, 400, "InvalidParameter", []string{"messages"}},
		{"not JSON", "POST", messages, `{"messages":[`, 400, "InvalidParameter", []string{"body"}},
		{"trailing data", "POST", messages, entries(ok) + `x`, 400, "InvalidParameter", []string{"body"}},
		{"content over 256 KiB of UTF-8", "POST", messages, entries(ok, ok, ok, wide), 400, "InvalidParameter", []string{"messages[3].content", "bytes"}},
		{"empty content", "POST", messages, entries(ok, `{"content":""}`), 400, "InvalidParameter", []string{"messages.1.content"}},
		{"content not a string", "POST", messages, entries(`{"content":42}`), 400, "InvalidParameter", []string{"messages.0.content"}},
		{"no content", "POST", messages, entries(`{"attributes":{}}`), 400, "MissingParameter", []string{"messages.0.content"}},
		{"boolean attribute", "POST", messages, entries(`{"content":"x","attributes":{"flag":true}}`), 400, "InvalidParameter", []string{"messages.0.attributes.flag"}},
		{"object attribute", "POST", messages, entries(`{"content":"x","attributes":{"obj":{"a":1}}}`), 400, "InvalidParameter", []string{"messages.0.attributes.obj"}},
		{"null attribute", "POST", messages, entries(`{"content":"x","attributes":{"nil":null}}`), 400, "InvalidParameter", []string{"messages.0.attributes.nil"}},
		{"array attribute", "POST", messages, entries(`{"content":"x","attributes":{"list":["a"]}}`), 400, "InvalidParameter", []string{"messages.0.attributes.list"}},
		{"attribute value of 257 characters", "POST", messages, entries(ok, `{"content":"x","attributes":{"long":"`+strings.Repeat("v", 257)+`"}}`), 400, "InvalidParameter", []string{"messages.1.attributes.long"}},
		{"attribute key of 65 characters", "POST", messages, entries(ok, ok, `{"content":"x","attributes":{"`+strings.Repeat("k", 65)+`":"v"}}`), 400, "InvalidParameter", []string{"messages[2].attributes", "64"}},
		{"empty attribute key", "POST", messages, entries(`{"content":"x","attributes":{"":"v"}}`), 400, "InvalidParameter", []string{"messages[0].attributes"}},
		{"33 attributes", "POST", messages, entries(attrs(33)), 400, "InvalidParameter", []string{"messages.0.attributes"}},
		{"delay 901", "POST", messages, entries(`{"content":"x","metadata":{"delayInSeconds":901}}`), 400, "InvalidParameter", []string{"messages.0.metadata.delayInSeconds"}},
		{"delay -1", "POST", messages, entries(ok, `{"content":"x","metadata":{"delayInSeconds":-1}}`), 400, "InvalidParameter", []string{"messages.1.metadata.delayInSeconds"}},
		{"delay not an integer", "POST", messages, entries(`{"content":"x","metadata":{"delayInSeconds":1.5}}`), 400, "InvalidParameter", []string{"messages.0.metadata.delayInSeconds"}},
		{"channel with *", "POST", messages, entries(`{"content":"x","metadata":{"channelId":"a*"}}`), 400, "InvalidParameter", []string{"messages.0.metadata.channelId"}},
		{"channel of 257 characters", "POST", messages, entries(`{"content":"x","metadata":{"channelId":"` + strings.Repeat("c", 257) + `"}}`), 400, "InvalidParameter", []string{"messages.0.metadata.channelId"}},
		{"channel *", "POST", messages, entries(`{"content":"x","metadata":{"channelId":"*"}}`), 400, "InvalidParameter", []string{"messages.0.metadata.channelId"}},
		{"dedup id of 129 characters", "POST", messages, entries(`{"content":"x","metadata":{"deduplicationId":"` + strings.Repeat("d", 129) + `"}}`), 400, "InvalidParameter", []string{"messages.0.metadata.deduplicationId"}},
		{"NUL in content", "POST", messages, entries(ok, `{"content":"a\u0000b"}`), 400, "InvalidParameter", []string{"messages.1.content"}},
		{"NUL in an attribute key", "POST", messages, entries(`{"content":"x","attributes":{"k\u0000":"v"}}`), 400, "InvalidParameter", []string{"messages.0.attributes"}},
		{"NUL in an attribute value", "POST", messages, entries(`{"content":"x","attributes":{"k":"v\u0000"}}`), 400, "InvalidParameter", []string{"messages.0.attributes.k"}},
		{"NUL in a channel", "POST", messages, entries(`{"content":"x","metadata":{"channelId":"c\u0000"}}`), 400, "InvalidParameter", []string{"messages.0.metadata.channelId"}},
		{"NUL in a dedup id", "POST", messages, entries(`{"content":"x","metadata":{"deduplicationId":"d\u0000"}}`), 400, "InvalidParameter", []string{"messages.0.metadata.deduplicationId"}},
		{"unknown top-level field", "POST", messages, `{"messages":[{"content":"x"}],"extra":1}`, 400, "InvalidParameter", []string{"extra", "unknown field"}},
		{"unknown message field", "POST", messages, entries(ok, `{"content":"x","bogus":1}`), 400, "InvalidParameter", []string{"messages.1.bogus", "unknown field"}},
		{"unknown metadata field", "POST", messages, entries(`{"content":"x","metadata":{"bogus":1}}`), 400, "InvalidParameter", []string{"messages.0.metadata.bogus", "unknown field"}},
		{"invalid queue OCID", "POST", "/20210201/queues/not-an-ocid/messages", entries(ok), 400, "InvalidParameter", []string{"queueId"}},
		{"unknown queue", "POST", "/20210201/queues/ocid1.queue.ferry.local." + strings.Repeat("a", 32) + "/messages", entries(ok), 404, "NotAuthorizedOrNotFound", nil},

		{"limit 0", "GET", messages + "?limit=0", "", 400, "InvalidParameter", []string{"limit"}},
		{"limit 33", "GET", messages + "?limit=33", "", 400, "InvalidParameter", []string{"limit"}},
		{"limit not a number", "GET", messages + "?limit=many", "", 400, "InvalidParameter", []string{"limit"}},
		{"visibility 43201", "GET", messages + "?visibilityInSeconds=43201", "", 400, "InvalidParameter", []string{"visibilityInSeconds"}},
		{"visibility -1", "GET", messages + "?visibilityInSeconds=-1", "", 400, "InvalidParameter", []string{"visibilityInSeconds"}},
		{"timeout 31", "GET", messages + "?timeoutInSeconds=31", "", 400, "InvalidParameter", []string{"timeoutInSeconds"}},
		{"channel filter a*b*", "GET", messages + "?channelFilter=" + url.QueryEscape("a*b*"), "", 400, "InvalidParameter", []string{"channelFilter"}},
		{"channel filter *", "GET", messages + "?channelFilter=" + url.QueryEscape("*"), "", 400, "InvalidParameter", []string{"channelFilter"}},
		{"NUL in a channel filter", "GET", messages + "?channelFilter=a%00", "", 400, "InvalidParameter", []string{"channelFilter"}},
		{"dlq not a boolean", "GET", messages + "?dlq=maybe", "", 400, "InvalidParameter", []string{"dlq"}},

		{"update visibility 43201", "PUT", messages + "/some-receipt", `{"visibilityInSeconds":43201}`, 400, "InvalidParameter", []string{"visibilityInSeconds"}},
		{"update without visibility", "PUT", messages + "/some-receipt", `{}`, 400, "MissingParameter", []string{"visibilityInSeconds"}},
		{"update with a garbage receipt", "PUT", messages + "/some-receipt", `{"visibilityInSeconds":1}`, 400, "InvalidParameter", []string{"receipt"}},
		{"delete with a garbage receipt", "DELETE", messages + "/some-receipt", "", 400, "InvalidParameter", []string{"receipt"}},
		{"delete with a receipt of 1025 characters", "DELETE", messages + "/" + strings.Repeat("r", 1025), "", 400, "InvalidParameter", []string{"messageReceipt"}},
		{"deleteMessages without entries", "POST", messages + "/actions/deleteMessages", `{"entries":[]}`, 400, "InvalidParameter", []string{"entries"}},
		{"deleteMessages with 33 entries", "POST", messages + "/actions/deleteMessages", `{"entries":[` + strings.Join(repeat(`{"receipt":"r"}`, 33), ",") + `]}`, 400, "InvalidParameter", []string{"entries"}},
		{"deleteMessages with an empty receipt", "POST", messages + "/actions/deleteMessages", `{"entries":[{"receipt":""}]}`, 400, "InvalidParameter", []string{"entries.0.receipt"}},
		{"deleteMessages with an unknown field", "POST", messages + "/actions/deleteMessages", `{"entries":[{"receipt":"r","x":1}]}`, 400, "InvalidParameter", []string{"entries.0.x", "unknown field"}},
		{"updateMessages visibility 43201", "POST", messages + "/actions/updateMessages", `{"entries":[{"receipt":"r","visibilityInSeconds":43201}]}`, 400, "InvalidParameter", []string{"entries.0.visibilityInSeconds"}},
		{"updateMessages with 33 entries", "POST", messages + "/actions/updateMessages", `{"entries":[` + strings.Join(repeat(`{"receipt":"r","visibilityInSeconds":1}`, 33), ",") + `]}`, 400, "InvalidParameter", []string{"entries"}},
		{"updateMessages without visibility", "POST", messages + "/actions/updateMessages", `{"entries":[{"receipt":"r"}]}`, 400, "MissingParameter", []string{"entries.0.visibilityInSeconds"}},
		{"stats of channel a*", "GET", "/20210201/queues/" + q + "/stats?channelId=" + url.QueryEscape("a*"), "", 400, "InvalidParameter", []string{"channelId"}},
		{"channels limit 0", "GET", "/20210201/queues/" + q + "/channels?limit=0", "", 400, "InvalidParameter", []string{"limit"}},
		{"channels filter a*b*", "GET", "/20210201/queues/" + q + "/channels?channelFilter=" + url.QueryEscape("a*b*"), "", 400, "InvalidParameter", []string{"channelFilter"}},
		{"redrive limit 0", "POST", "/20210201/queues/" + q + "/actions/redrive", `{"limit":0}`, 400, "InvalidParameter", []string{"limit"}},
		{"redrive limit 10001", "POST", "/20210201/queues/" + q + "/actions/redrive", `{"limit":10001}`, 400, "InvalidParameter", []string{"limit"}},
		{"redrive unknown field", "POST", "/20210201/queues/" + q + "/actions/redrive", `{"max":1}`, 400, "InvalidParameter", []string{"max", "unknown field"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			r := srv.RawJSON(t, token, tc.method, tc.path, body)
			e2e.RequireAPIError(t, r.Status, r.Body, tc.status, tc.code, tc.contains...)
		})
	}

	t.Run("body over 2 MiB", func(t *testing.T) {
		big := entries(`{"content":"` + strings.Repeat("x", 2<<20) + `"}`)
		r := srv.RawJSON(t, token, "POST", messages, strings.NewReader(big))
		e2e.RequireAPIError(t, r.Status, r.Body, http.StatusRequestEntityTooLarge, "PayloadTooLarge")
		// Without a Content-Length (chunked), the limit holds while reading.
		r = srv.RawJSON(t, token, "POST", messages, iotest.HalfReader(strings.NewReader(big)))
		e2e.RequireAPIError(t, r.Status, r.Body, http.StatusRequestEntityTooLarge, "PayloadTooLarge")
		// 20 messages just under 100 KiB each fit (just under 2 MiB).
		fits := entries(repeat(`{"content":"`+strings.Repeat("y", 100<<10-100)+`"}`, 20)...)
		require.Less(t, len(fits), 2<<20)
		r = srv.RawJSON(t, token, "POST", messages, strings.NewReader(fits))
		require.Equal(t, http.StatusOK, r.Status, "%.300s", r.Body)
		srv.Purge(t, c, q, sdk.PurgeTypeBOTH)
	})

	c.RequireStats(t, q, 0, 0, 0, 0)
	require.Zero(t, srv.StoredMessages(t, ""), "no rejected request stored anything")
}

// TestDataPlaneQueueLifecycle: a queue being deleted answers 409 IncorrectState, a deleted one 404, and neither
// stores anything.
func TestDataPlaneQueueLifecycle(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	srv.Node.Executor().Stop() // keep the queue DELETING until the test runs the delete itself
	tenancyID, c := srv.Admin(t, "dp")
	token := srv.Token(t, tenancyID, "admin", "Administrators")
	q := c.NewQueue(t, tenancyID)
	ctx := context.Background()
	c.Put(t, q, e2e.Msg("before the delete"))
	leased := c.Get(t, q)
	require.Len(t, leased, 1)

	resp, err := c.DeleteQueueWithResponse(ctx, q, &sdk.DeleteQueueParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode(), string(resp.Body))
	wr := resp.HTTPResponse.Header.Get("opc-work-request-id")

	statsStatus := func() (int, []byte) {
		r := srv.RawJSON(t, token, "GET", "/20210201/queues/"+q+"/stats", nil)
		return r.Status, r.Body
	}
	require.Eventually(t, func() bool { s, _ := statsStatus(); return s == http.StatusConflict }, 5*time.Second, 50*time.Millisecond,
		"the data plane sees the DELETING state within its cache time")
	s, b := statsStatus()
	e2e.RequireAPIError(t, s, b, http.StatusConflict, "IncorrectState", q, "DELETING")
	everyCall := func(status int, code string) {
		t.Helper()
		for _, call := range []struct{ method, path, body string }{
			{"POST", "/messages", `{"messages":[{"content":"x"}]}`},
			{"GET", "/messages", ""},
			{"DELETE", "/messages/" + leased[0].Receipt, ""},
			{"PUT", "/messages/" + leased[0].Receipt, `{"visibilityInSeconds":0}`},
			{"POST", "/messages/actions/deleteMessages", `{"entries":[{"receipt":"` + leased[0].Receipt + `"}]}`},
			{"POST", "/messages/actions/updateMessages", `{"entries":[{"receipt":"` + leased[0].Receipt + `","visibilityInSeconds":0}]}`},
			{"GET", "/stats", ""},
			{"GET", "/channels", ""},
			{"POST", "/actions/redrive", `{}`},
		} {
			var body io.Reader
			if call.body != "" {
				body = strings.NewReader(call.body)
			}
			r := srv.RawJSON(t, token, call.method, "/20210201/queues/"+q+call.path, body)
			e2e.RequireAPIError(t, r.Status, r.Body, status, code)
		}
	}
	everyCall(http.StatusConflict, "IncorrectState")
	require.EqualValues(t, 1, srv.StoredMessages(t, q), "nothing added, nothing deleted")

	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, srv.WaitWorkRequest(t, c, wr).Status)
	require.Eventually(t, func() bool { s, _ := statsStatus(); return s == http.StatusNotFound }, 5*time.Second, 50*time.Millisecond)
	everyCall(http.StatusNotFound, "NotAuthorizedOrNotFound")
	require.Zero(t, srv.StoredMessages(t, ""))
}

// TestDataPlaneTenantIsolation: with tenancy B's token, every data-plane operation on tenancy A's queue answers
// 404 and changes nothing; A's receipts are worthless on B's queues.
func TestDataPlaneTenantIsolation(t *testing.T) {
	t.Parallel()
	srv, tenancyA, a := testserver.StartAdmin(t)
	tenancyB, b := srv.Admin(t, "tenant-b")
	qa := a.NewQueue(t, tenancyA, e2e.WithDLQ(5))
	qb := b.NewQueue(t, tenancyB)
	ctx := context.Background()
	a.Put(t, qa, e2e.MsgOn("leased", "ch"), e2e.MsgOn("waiting", "ch"))
	leased := a.Get(t, qa, e2e.Visibility(600))
	require.Len(t, leased, 1)
	receipt := leased[0].Receipt

	notFound := func(name string, status int, body []byte, err error) {
		t.Helper()
		require.NoError(t, err, name)
		e2e.RequireAPIError(t, status, body, http.StatusNotFound, "NotAuthorizedOrNotFound")
	}
	putResp, err := b.PutMessagesWithResponse(ctx, qa, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: []sdk.PutMessagesDetailsEntry{e2e.Msg("intruder")}})
	notFound("PutMessages", putResp.StatusCode(), putResp.Body, err)
	getResp, err := b.GetMessagesWithResponse(ctx, qa, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(0)})
	notFound("GetMessages", getResp.StatusCode(), getResp.Body, err)
	getResp, err = b.GetMessagesWithResponse(ctx, qa, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(0), Dlq: e2e.Ptr(true)})
	notFound("GetMessages dlq", getResp.StatusCode(), getResp.Body, err)
	delResp, err := b.DeleteMessageWithResponse(ctx, qa, receipt, &sdk.DeleteMessageParams{})
	notFound("DeleteMessage", delResp.StatusCode(), delResp.Body, err)
	updResp, err := b.UpdateMessageWithResponse(ctx, qa, receipt, &sdk.UpdateMessageParams{}, sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	notFound("UpdateMessage", updResp.StatusCode(), updResp.Body, err)
	delsResp, err := b.DeleteMessagesWithResponse(ctx, qa, &sdk.DeleteMessagesParams{}, sdk.DeleteMessagesDetails{Entries: []sdk.DeleteMessagesDetailsEntry{{Receipt: receipt}}})
	notFound("DeleteMessages", delsResp.StatusCode(), delsResp.Body, err)
	updsResp, err := b.UpdateMessagesWithResponse(ctx, qa, &sdk.UpdateMessagesParams{}, sdk.UpdateMessagesDetails{Entries: []sdk.UpdateMessagesDetailsEntry{{Receipt: receipt, VisibilityInSeconds: 0}}})
	notFound("UpdateMessages", updsResp.StatusCode(), updsResp.Body, err)
	statsResp, err := b.GetStatsWithResponse(ctx, qa, &sdk.GetStatsParams{})
	notFound("GetStats", statsResp.StatusCode(), statsResp.Body, err)
	statsResp, err = b.GetStatsWithResponse(ctx, qa, &sdk.GetStatsParams{ChannelId: e2e.Ptr("ch")})
	notFound("GetStats channel", statsResp.StatusCode(), statsResp.Body, err)
	chResp, err := b.ListChannelsWithResponse(ctx, qa, &sdk.ListChannelsParams{})
	notFound("ListChannels", chResp.StatusCode(), chResp.Body, err)
	redResp, err := b.RedriveMessagesWithResponse(ctx, qa, &sdk.RedriveMessagesParams{}, sdk.RedriveMessagesDetails{})
	notFound("RedriveMessages", redResp.StatusCode(), redResp.Body, err)
	purgeResp, err := b.PurgeQueueWithResponse(ctx, qa, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
	notFound("PurgeQueue", purgeResp.StatusCode(), purgeResp.Body, err)

	// A's receipt on B's own queue names nothing there.
	delResp, err = b.DeleteMessageWithResponse(ctx, qb, receipt, &sdk.DeleteMessageParams{})
	require.NoError(t, err)
	e2e.RequireAPIError(t, delResp.StatusCode(), delResp.Body, http.StatusBadRequest, "InvalidParameter", "receipt")

	// Nothing changed for A: one message leased under the same receipt, one waiting.
	a.RequireStats(t, qa, 1, 1, 0, 0)
	require.EqualValues(t, 2, srv.StoredMessages(t, qa))
	require.Zero(t, srv.StoredMessages(t, qb))
	rest := a.Get(t, qa)
	require.Len(t, rest, 1)
	require.Equal(t, "waiting", rest[0].Content)
	a.DeleteAll(t, qa, append(leased, rest...))
	a.RequireStats(t, qa, 0, 0, 0, 0)
}
