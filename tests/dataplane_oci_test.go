package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// End-to-end tests of the data plane's shapes that follow OCI Queue's (oci-go-sdk's package queue): a message's
// createdAt, the batch results of deleteMessages and updateMessages, and metadata.customProperties with the
// empty channelId OCI's SDK sends for the default channel. The purge's scope is in purge_test.go.

// keysOf lists the keys of a JSON object, sorted.
func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	return slices.Sorted(maps.Keys(m))
}

// TestCreatedAt: every message carries createdAt, the time it was published; a second delivery keeps it, and a
// watch's frames carry it too.
func TestCreatedAt(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID)

	// The database's clock stamps the message; it is this machine's, so the put's call brackets it (with a
	// second's slack for the rounding to microseconds and the clock's granularity).
	before := time.Now()
	c.Put(t, q, e2e.Msg("first"))
	between := time.Now()
	c.Put(t, q, e2e.Msg("second"))
	after := time.Now()

	raw := srv.Call(t, token, http.MethodGet, "/20210201/queues/"+q+"/messages?limit=2&visibilityInSeconds=0", nil)
	require.Equal(t, http.StatusOK, raw.Status, string(raw.Body))
	var body struct{ Messages []json.RawMessage }
	require.NoError(t, json.Unmarshal(raw.Body, &body))
	require.Len(t, body.Messages, 2)
	for _, m := range body.Messages {
		require.Contains(t, keysOf(t, m), "createdAt", "createdAt is in every message: %s", m)
	}
	var got sdk.GetMessages
	require.NoError(t, json.Unmarshal(raw.Body, &got))
	first, second := got.Messages[0], got.Messages[1]
	require.Equal(t, []string{"first", "second"}, e2e.Contents(got.Messages))
	require.WithinRange(t, first.CreatedAt, before.Add(-time.Second), between.Add(time.Second))
	require.WithinRange(t, second.CreatedAt, between.Add(-time.Second), after.Add(time.Second))
	require.False(t, second.CreatedAt.Before(first.CreatedAt), "published in that order")
	require.Equal(t, time.UTC, first.CreatedAt.Location(), "in UTC")

	// Delivered again (its lease of 0 seconds ended at once): the same createdAt, a later visibleAfter.
	again := c.Get(t, q, e2e.Limit(2), e2e.Visibility(60))
	require.Equal(t, []int{2, 2}, e2e.DeliveryCounts(again))
	require.True(t, first.CreatedAt.Equal(again[0].CreatedAt), "%s, then %s", first.CreatedAt, again[0].CreatedAt)
	require.True(t, second.CreatedAt.Equal(again[1].CreatedAt))
	require.True(t, again[0].VisibleAfter.After(again[0].CreatedAt))
	c.DeleteAll(t, q, again)

	// A watch's messages frame has the GetMessages shape.
	before = time.Now()
	c.Put(t, q, e2e.Msg("pushed"))
	after = time.Now()
	w := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{Window: 1})
	pushed := e2e.Receive(t, w, 1, 5*time.Second)
	require.Equal(t, "pushed", pushed[0].Content)
	require.WithinRange(t, pushed[0].CreatedAt, before.Add(-time.Second), after.Add(time.Second))
}

// TestBatchResultShapes: deleteMessages and updateMessages answer OCI's result: clientFailures and serverFailures,
// and per failed entry errorCode (the HTTP status the entry would answer alone), errorMessage, and ferry's code
// (Conflict for a stale receipt, NotAuthorizedOrNotFound for a gone message, InvalidParameter for a bad receipt);
// a deleted entry is {}, an updated one {id, visibleAfter}.
func TestBatchResultShapes(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID)

	// A stale receipt: a lease of 0 seconds ends at once, and the next lease replaces it.
	c.Put(t, q, e2e.Msg("stale"))
	stale := c.Get(t, q, e2e.Visibility(0))[0]
	current := c.Get(t, q, e2e.Visibility(60))[0]
	require.Equal(t, stale.Id, current.Id)
	// A gone message: acknowledged already.
	c.Put(t, q, e2e.Msg("ok"), e2e.Msg("gone"))
	leased := c.Get(t, q, e2e.Limit(2), e2e.Visibility(60))
	require.Equal(t, []string{"ok", "gone"}, e2e.Contents(leased))
	ok, gone := leased[0], leased[1]
	c.DeleteAll(t, q, []sdk.GetMessage{gone})

	receipts := []string{ok.Receipt, stale.Receipt, gone.Receipt, "not-a-receipt"}
	wantFailures := []struct {
		status int
		code   string
	}{{http.StatusConflict, "Conflict"}, {http.StatusNotFound, "NotAuthorizedOrNotFound"}, {http.StatusBadRequest, "InvalidParameter"}}
	type result struct {
		ClientFailures *int
		ServerFailures *int
		Entries        []json.RawMessage
	}
	check := func(action string, entries []map[string]any) []json.RawMessage {
		t.Helper()
		raw := srv.Call(t, token, http.MethodPost, "/20210201/queues/"+q+"/messages/actions/"+action, map[string]any{"entries": entries})
		require.Equal(t, http.StatusOK, raw.Status, string(raw.Body))
		require.Equal(t, []string{"clientFailures", "entries", "serverFailures"}, keysOf(t, raw.Body), string(raw.Body))
		var r result
		require.NoError(t, json.Unmarshal(raw.Body, &r))
		require.Equal(t, 3, *r.ClientFailures, action)
		require.Equal(t, 0, *r.ServerFailures, action)
		require.Len(t, r.Entries, 4)
		for i, want := range wantFailures {
			e := r.Entries[i+1]
			require.Equal(t, []string{"code", "errorCode", "errorMessage"}, keysOf(t, e), "%s entry %d: %s", action, i+1, e)
			var failed struct {
				Code         string
				ErrorCode    json.Number
				ErrorMessage string
			}
			dec := json.NewDecoder(strings.NewReader(string(e)))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&failed))
			require.Equal(t, json.Number(fmt.Sprint(want.status)), failed.ErrorCode, "%s entry %d: an integer, the HTTP status", action, i+1)
			require.Equal(t, want.code, failed.Code, "%s entry %d", action, i+1)
			require.NotEmpty(t, failed.ErrorMessage)
		}
		return r.Entries
	}

	before := time.Now()
	updates := make([]map[string]any, len(receipts))
	for i, r := range receipts {
		updates[i] = map[string]any{"receipt": r, "visibilityInSeconds": 120}
	}
	entries := check("updateMessages", updates)
	require.Equal(t, []string{"id", "visibleAfter"}, keysOf(t, entries[0]))
	var updated sdk.UpdateMessagesResultEntry
	require.NoError(t, json.Unmarshal(entries[0], &updated))
	require.Equal(t, ok.Id, *updated.Id)
	require.WithinDuration(t, before.Add(120*time.Second), *updated.VisibleAfter, 10*time.Second)

	deletes := make([]map[string]any, len(receipts))
	for i, r := range receipts {
		deletes[i] = map[string]any{"receipt": r}
	}
	entries = check("deleteMessages", deletes)
	require.JSONEq(t, `{}`, string(entries[0]), "a deleted entry is empty")

	// The generated SDK reads the same answer.
	ack := func() *sdk.DeleteMessagesResult {
		resp, err := c.DeleteMessagesWithResponse(context.Background(), q, &sdk.DeleteMessagesParams{},
			sdk.DeleteMessagesDetails{Entries: []sdk.DeleteMessagesDetailsEntry{{Receipt: current.Receipt}}})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
		return resp.JSON200
	}
	first := ack()
	require.Equal(t, [2]int{0, 0}, [2]int{first.ClientFailures, first.ServerFailures})
	require.Nil(t, first.Entries[0].ErrorCode)
	require.Nil(t, first.Entries[0].Code)
	second := ack()
	require.Equal(t, 1, second.ClientFailures, "the second acknowledgement finds the message gone")
	require.Equal(t, http.StatusNotFound, *second.Entries[0].ErrorCode)
	require.Equal(t, "NotAuthorizedOrNotFound", *second.Entries[0].Code)
	require.Zero(t, srv.StoredMessages(t, q))
}

// ociPut is a PutMessages body as OCI's SDK writes one: metadata with channelId (empty for the default channel)
// and customProperties.
func ociPut(entries ...map[string]any) map[string]any { return map[string]any{"messages": entries} }

// TestCustomProperties: metadata.customProperties come back where they were sent (in GetMessages and a watch's
// frames, apart from the attributes), count toward the message's size, and an empty channelId is the default
// channel.
func TestCustomProperties(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID)
	messages := "/20210201/queues/" + q + "/messages"

	custom := map[string]string{"region": "eu", "note": `<&> "é"`}
	raw := srv.Call(t, token, http.MethodPost, messages, ociPut(
		map[string]any{"content": "oci", "metadata": map[string]any{"channelId": "", "customProperties": custom}},
		map[string]any{"content": "both", "attributes": map[string]any{"n": 1},
			"metadata": map[string]any{"channelId": "c1", "customProperties": map[string]string{"region": "us"}}},
		map[string]any{"content": "plain", "metadata": map[string]any{"channelId": ""}},
	))
	require.Equal(t, http.StatusOK, raw.Status, string(raw.Body))

	raw = srv.Call(t, token, http.MethodGet, messages+"?limit=3&visibilityInSeconds=0", nil)
	require.Equal(t, http.StatusOK, raw.Status, string(raw.Body))
	var body struct {
		Messages []struct {
			Content    string
			Attributes json.RawMessage
			Metadata   json.RawMessage
		}
	}
	require.NoError(t, json.Unmarshal(raw.Body, &body))
	require.Len(t, body.Messages, 3)
	require.Equal(t, "oci", body.Messages[0].Content)
	require.JSONEq(t, `{"customProperties":{"note":"<&> \"é\"","region":"eu"}}`, string(body.Messages[0].Metadata),
		"the default channel is left out; the properties come back in the metadata")
	require.Nil(t, body.Messages[0].Attributes, "custom properties are not attributes")
	require.JSONEq(t, `{"n":1}`, string(body.Messages[1].Attributes))
	require.JSONEq(t, `{"channelId":"c1","customProperties":{"region":"us"}}`, string(body.Messages[1].Metadata))
	require.Nil(t, body.Messages[2].Metadata, "nothing to say: the default channel and no properties")

	// Through the generated SDK.
	got := c.Get(t, q, e2e.Limit(3), e2e.Visibility(60))
	require.Equal(t, custom, map[string]string(*got[0].Metadata.CustomProperties))
	require.Nil(t, got[0].Metadata.ChannelId)
	c.DeleteAll(t, q, got)

	// Sizes: content, and the keys and values of the attributes (a number counts 8) and custom properties.
	sized := c.NewQueue(t, tenancyID)
	props := sdk.MessageCustomProperties{"k": "vv"}
	c.Put(t, sized, e2e.WithMeta("xyz", sdk.MessageMetadata{CustomProperties: &props}))
	require.Equal(t, int64(3+1+2), c.Stats(t, sized).Queue.SizeInBytes)

	// A watch's frames carry them too.
	w := e2e.Watch(t, srv.URL, token, sized, sdk.WatchOptions{Window: 1})
	pushed := e2e.Receive(t, w, 1, 5*time.Second)
	require.Equal(t, props, *pushed[0].Metadata.CustomProperties)
}

// TestCustomPropertiesFilter: consumer group filters see custom properties as they see attributes.
func TestCustomPropertiesFilter(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	c.NewGroup(t, q, "eu", `:region = "eu"`)
	c.NewGroup(t, q, "tiered", `:tier AND hasPrefix(:region, "u")`)
	withProps := func(content string, props map[string]string, attrs map[string]any) sdk.PutMessagesDetailsEntry {
		e := e2e.WithAttrs(content, attrs)
		p := sdk.MessageCustomProperties(props)
		e.Metadata = &sdk.MessageMetadata{CustomProperties: &p}
		return e
	}
	res := c.Put(t, q,
		withProps("custom eu", map[string]string{"region": "eu"}, nil),
		e2e.WithAttrs("attribute eu", map[string]any{"region": "eu"}),
		withProps("custom us gold", map[string]string{"region": "us", "tier": "gold"}, nil),
		withProps("mixed", map[string]string{"tier": "silver"}, map[string]any{"region": "us"}),
		e2e.Msg("none"),
	)
	require.Equal(t, []int{2, 2, 2, 2, 1}, e2e.GroupCounts(res), "the primary group takes every message")
	require.Equal(t, []string{"attribute eu", "custom eu"}, c.Drain(t, q, e2e.OfGroup("eu")))
	require.Equal(t, []string{"custom us gold", "mixed"}, c.Drain(t, q, e2e.OfGroup("tiered")),
		"one filter reads a custom property and an attribute of the same message")
}

// TestCustomPropertiesBadInput: a key both an attribute and a custom property, and the limits the two share,
// answer 400 naming the field; a rejected batch writes nothing.
func TestCustomPropertiesBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID)
	messages := "/20210201/queues/" + q + "/messages"
	keys := func(prefix string, n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprint(prefix, i)] = "v"
		}
		return m
	}
	ok := map[string]any{"content": "fine"}
	withCustom := func(props any, attrs map[string]any) map[string]any {
		e := map[string]any{"content": "x", "metadata": map[string]any{"channelId": "", "customProperties": props}}
		if attrs != nil {
			e["attributes"] = attrs
		}
		return e
	}
	for _, tc := range []struct {
		name     string
		entry    map[string]any
		code     string
		contains []string
	}{
		{"a key in both", withCustom(map[string]string{"k": "b", "other": "c"}, map[string]any{"k": "a"}), "InvalidParameter",
			[]string{"messages[1].metadata.customProperties.k", "attribute"}},
		{"33 keys together", withCustom(keys("c", 13), keys("a", 20)), "InvalidParameter", []string{"messages[1].attributes", "32"}},
		{"33 custom properties", withCustom(keys("c", 33), nil), "InvalidParameter", []string{"messages.1.metadata.customProperties"}},
		{"a key of 65 characters", withCustom(map[string]string{strings.Repeat("k", 65): "v"}, nil), "InvalidParameter",
			[]string{"messages[1].metadata.customProperties", "64"}},
		{"an empty key", withCustom(map[string]string{"": "v"}, nil), "InvalidParameter", []string{"messages[1].metadata.customProperties"}},
		{"a value of 257 characters", withCustom(map[string]string{"long": strings.Repeat("v", 257)}, nil), "InvalidParameter",
			[]string{"messages.1.metadata.customProperties.long"}},
		{"a number", withCustom(map[string]any{"n": 1}, nil), "InvalidParameter", []string{"messages.1.metadata.customProperties.n"}},
		{"an object", withCustom(map[string]any{"o": map[string]any{}}, nil), "InvalidParameter", []string{"messages.1.metadata.customProperties.o"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := srv.Call(t, token, http.MethodPost, messages, ociPut(ok, tc.entry))
			e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, tc.code, tc.contains...)
		})
	}
	require.Zero(t, srv.StoredMessages(t, q), "no batch was stored")
	// At the limits: 32 keys together, and the longest key and value.
	c.Put(t, q, e2e.WithMeta("x", sdk.MessageMetadata{CustomProperties: &sdk.MessageCustomProperties{
		strings.Repeat("k", 64): strings.Repeat("v", 256)}}))
	r := srv.Call(t, token, http.MethodPost, messages, ociPut(withCustom(keys("c", 12), keys("a", 20))))
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
}
