package tests

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// deleteAndGet calls DeleteAndGetMessages with receipts and the query, and decodes its answer.
func deleteAndGet(t *testing.T, srv *testserver.Server, token, queueID, query string, receipts ...string) sdk.DeleteAndGetMessagesResult {
	t.Helper()
	entries := make([]map[string]string, len(receipts))
	for i, r := range receipts {
		entries[i] = map[string]string{"receipt": r}
	}
	raw := srv.Call(t, token, http.MethodPost, "/20210201/queues/"+queueID+"/messages/actions/deleteAndGetMessages?"+query,
		map[string]any{"entries": entries})
	require.Equal(t, http.StatusOK, raw.Status, string(raw.Body))
	var out sdk.DeleteAndGetMessagesResult
	require.NoError(t, json.Unmarshal(raw.Body, &out))
	require.Len(t, out.Deleted.Entries, len(receipts), "one outcome per receipt")
	return out
}

// entryCodes lists each entry's error code ("" for a success).
func entryCodes(res sdk.DeleteMessagesResult) []string {
	out := make([]string, len(res.Entries))
	for i, e := range res.Entries {
		if e.Code != nil {
			out[i] = *e.Code
		}
	}
	return out
}

// TestDeleteAndGetMessages: the combined call acknowledges the previous batch (each receipt on its own, as
// DeleteMessages) and leases the next one; an invalid request acknowledges nothing.
func TestDeleteAndGetMessages(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID)
	c.Put(t, q, e2e.Msg("m0"), e2e.Msg("m1"), e2e.Msg("m2"), e2e.Msg("m3"), e2e.Msg("m4"))
	first := c.Get(t, q, e2e.Limit(2), e2e.Visibility(60))
	require.Equal(t, []string{"m0", "m1"}, e2e.Contents(first))

	// A bad limit: 400, and the receipts stay unacknowledged.
	raw := srv.Call(t, token, http.MethodPost, "/20210201/queues/"+q+"/messages/actions/deleteAndGetMessages?limit=99",
		map[string]any{"entries": []any{map[string]any{"receipt": first[0].Receipt}}})
	e2e.RequireAPIError(t, raw.Status, raw.Body, http.StatusBadRequest, "InvalidParameter")

	// The first batch acknowledged (and a malformed receipt refused on its own), the next two leased.
	second := deleteAndGet(t, srv, token, q, "limit=2&timeoutInSeconds=0", first[0].Receipt, "not-a-receipt", first[1].Receipt)
	require.Equal(t, []string{"", "InvalidParameter", ""}, entryCodes(second.Deleted))
	require.Equal(t, 1, second.Deleted.ClientFailures)
	require.Equal(t, []string{"m2", "m3"}, e2e.Contents(second.Messages))
	require.Equal(t, []int{1, 1}, e2e.DeliveryCounts(second.Messages))

	// An already acknowledged receipt is gone (404), as in DeleteMessages.
	third := deleteAndGet(t, srv, token, q, "limit=2&timeoutInSeconds=0", second.Messages[0].Receipt, first[0].Receipt, second.Messages[1].Receipt)
	require.Equal(t, []string{"", "NotAuthorizedOrNotFound", ""}, entryCodes(third.Deleted))
	require.Equal(t, []string{"m4"}, e2e.Contents(third.Messages))

	// A stale receipt (its message leased again since) is a conflict, and deletes nothing.
	released := deleteAndGet(t, srv, token, q, "limit=1&timeoutInSeconds=0&visibilityInSeconds=0", third.Messages[0].Receipt)
	require.Equal(t, []string{""}, entryCodes(released.Deleted))
	require.Empty(t, released.Messages, "nothing left")
	c.Put(t, q, e2e.Msg("m5"))
	once := c.Get(t, q, e2e.Limit(1), e2e.Visibility(0))
	again := c.Get(t, q, e2e.Limit(1), e2e.Visibility(60))
	require.Equal(t, []string{"m5"}, e2e.Contents(again))
	stale := deleteAndGet(t, srv, token, q, "limit=1&timeoutInSeconds=0", once[0].Receipt)
	require.Equal(t, []string{"Conflict"}, entryCodes(stale.Deleted))
	require.Empty(t, stale.Messages, "m5 is still leased")
	last := deleteAndGet(t, srv, token, q, "limit=1&timeoutInSeconds=0", again[0].Receipt)
	require.Equal(t, []string{""}, entryCodes(last.Deleted))
	require.Empty(t, last.Messages)
	require.Empty(t, c.Get(t, q, e2e.Limit(32), e2e.Timeout(0)), "every message acknowledged")
}

// TestDeleteAndGetMessagesOrdered: acknowledging the head of an ordered message group makes the group's next
// message visible, and the same call leases it.
func TestDeleteAndGetMessagesOrdered(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID)
	c.Put(t, q, e2e.InGroup("a1", "A"), e2e.InGroup("a2", "A"))
	head := c.Get(t, q, e2e.Limit(2), e2e.Visibility(60))
	require.Equal(t, []string{"a1"}, e2e.Contents(head), "only the group's head is visible")
	next := deleteAndGet(t, srv, token, q, "limit=2&timeoutInSeconds=0", head[0].Receipt)
	require.Equal(t, []string{""}, entryCodes(next.Deleted))
	require.Equal(t, []string{"a2"}, e2e.Contents(next.Messages))
}

// TestDeleteAndGetMessagesSingleActiveConsumer: on a single-active-consumer queue the combined call acknowledges
// (on its own, before the consumers' decision) and leases as the active consumer, in publish order; a call
// without consumerId is refused and acknowledges nothing.
func TestDeleteAndGetMessagesSingleActiveConsumer(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID, e2e.WithSingleActiveConsumer(30))
	c.Put(t, q, e2e.Msg("s0"), e2e.Msg("s1"), e2e.Msg("s2"))
	got := srv.Call(t, token, http.MethodGet, "/20210201/queues/"+q+"/messages?consumerId=c1&limit=1&timeoutInSeconds=0&visibilityInSeconds=60", nil)
	require.Equal(t, http.StatusOK, got.Status, string(got.Body))
	var first sdk.GetMessages
	require.NoError(t, json.Unmarshal(got.Body, &first))
	require.Equal(t, []string{"s0"}, e2e.Contents(first.Messages))

	raw := srv.Call(t, token, http.MethodPost, "/20210201/queues/"+q+"/messages/actions/deleteAndGetMessages?limit=1",
		map[string]any{"entries": []any{map[string]any{"receipt": first.Messages[0].Receipt}}})
	e2e.RequireAPIError(t, raw.Status, raw.Body, http.StatusBadRequest, "MissingParameter")

	next := deleteAndGet(t, srv, token, q, "consumerId=c1&limit=2&timeoutInSeconds=0&visibilityInSeconds=60", first.Messages[0].Receipt)
	require.Equal(t, []string{""}, entryCodes(next.Deleted), "s0 acknowledged by this call, not by the refused one")
	require.Equal(t, []string{"s1", "s2"}, e2e.Contents(next.Messages))
}
