package oci

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/queue"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
)

// dataOperations are queue.QueueClient's operations, on the queue's messagesEndpoint.
var dataOperations = map[string]func(*testing.T, *env){
	"PutMessages":    testPutMessages,
	"GetMessages":    testGetMessages,
	"DeleteMessage":  testDeleteMessage,
	"DeleteMessages": testDeleteMessages,
	"UpdateMessage":  testUpdateMessage,
	"UpdateMessages": testUpdateMessages,
	"GetStats":       testGetStats,
	"ListChannels":   testListChannels,
}

func TestQueueClient(t *testing.T) {
	t.Parallel()
	runOperations(t, start(t), dataOperations)
}

// newQueue creates a queue through ferry's SDK and returns it with a data-plane client of its messagesEndpoint.
func (e *env) newQueue(t *testing.T, opts ...e2e.QueueOption) (string, queue.QueueClient) {
	t.Helper()
	queueID := e.ferry.NewQueue(t, e.tenancy, opts...)
	return queueID, e.messages(t, e.queueEndpoint(t, queueID))
}

// leased publishes contents through ferry's SDK and leases them all (for 300 s): the receipts to act on.
func (e *env) leased(t *testing.T, queueID string, contents ...string) []sdk.GetMessage {
	t.Helper()
	e.ferry.Put(t, queueID, e2e.Map(contents, e2e.Msg)...)
	got := e.ferry.Get(t, queueID, e2e.Limit(len(contents)), e2e.Visibility(300))
	require.Len(t, got, len(contents))
	return got
}

func testPutMessages(t *testing.T, e *env) {
	c := ctx(t)
	queueID, data := e.newQueue(t)
	before := time.Now().Add(-time.Minute)

	resp, err := data.PutMessages(c, queue.PutMessagesRequest{QueueId: &queueID, PutMessagesDetails: queue.PutMessagesDetails{
		Messages: []queue.PutMessagesDetailsEntry{
			{Content: common.String("plain")},
			{Content: common.String("on a channel"), Metadata: &queue.MessageMetadata{ChannelId: common.String("orders"),
				CustomProperties: map[string]string{"type": "order", "region": "eu"}}},
			// Only custom properties: the SDK sends "channelId": null (the field is mandatory in its type).
			{Content: common.String("properties only"), Metadata: &queue.MessageMetadata{CustomProperties: map[string]string{"k": "v"}}},
		}}})
	noError(t, resp.RawResponse, err)
	require.Len(t, resp.Messages, 3)
	var ids []int64
	for _, m := range resp.Messages {
		require.Positive(t, *m.Id)
		require.True(t, m.ExpireAfter.After(before.Add(24*time.Hour)), "expires after the default retention: %v", m.ExpireAfter)
		ids = append(ids, *m.Id)
	}
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(ids))), 3, "distinct ids")

	e.ferry.RequireStats(t, queueID, 3, 0, 0, 0)
	require.Equal(t, int64(1), e.ferry.StatsOf(t, queueID, "orders").Queue.VisibleMessages)
}

func testGetMessages(t *testing.T, e *env) {
	c := ctx(t)
	queueID, data := e.newQueue(t, e2e.WithConsumerGroups(true))
	group := e.ferry.NewGroup(t, queueID, "copies", "")
	// Published in OCI's JSON shape (metadata.customProperties), independently of the SDK's PutMessages.
	put := e.srv.Call(t, e.token, "POST", "/20210201/queues/"+queueID+"/messages", map[string]any{"messages": []map[string]any{
		{"content": "first", "metadata": map[string]any{"channelId": "eu", "customProperties": map[string]string{"type": "order"}}},
		{"content": "second", "metadata": map[string]any{"channelId": "us"}},
	}})
	require.Equal(t, http.StatusOK, put.Status, "%s", put.Body)
	before := time.Now().Add(-time.Minute)

	resp, err := data.GetMessages(c, queue.GetMessagesRequest{QueueId: &queueID, Limit: common.Int(10),
		VisibilityInSeconds: common.Int(120), TimeoutInSeconds: common.Int(0)})
	noError(t, resp.RawResponse, err)
	require.Len(t, resp.Messages, 2)
	byContent := map[string]queue.GetMessage{}
	for _, m := range resp.Messages {
		byContent[*m.Content] = m
		require.Positive(t, *m.Id)
		require.NotEmpty(t, *m.Receipt)
		requireField(t, 1, m.DeliveryCount)
		require.True(t, m.VisibleAfter.After(time.Now().Add(100*time.Second)), "leased for 120 s: %v", m.VisibleAfter)
		require.True(t, m.ExpireAfter.After(m.VisibleAfter.Time))
		require.NotNil(t, m.CreatedAt, "createdAt")
		require.True(t, m.CreatedAt.After(before), "createdAt %v", m.CreatedAt)
		require.NotNil(t, m.Metadata)
	}
	require.Equal(t, "eu", *byContent["first"].Metadata.ChannelId)
	require.Equal(t, map[string]string{"type": "order"}, byContent["first"].Metadata.CustomProperties)
	require.Equal(t, "us", *byContent["second"].Metadata.ChannelId)

	// Nothing left to lease; another consumer group has its own copies; a channel filter.
	resp, err = data.GetMessages(c, queue.GetMessagesRequest{QueueId: &queueID, TimeoutInSeconds: common.Int(0)})
	noError(t, resp.RawResponse, err)
	require.Empty(t, resp.Messages)
	resp, err = data.GetMessages(c, queue.GetMessagesRequest{QueueId: &queueID, ConsumerGroupId: &group.Id,
		ChannelFilter: common.String("u*"), TimeoutInSeconds: common.Int(0)})
	noError(t, resp.RawResponse, err)
	require.Len(t, resp.Messages, 1)
	requireField(t, "second", resp.Messages[0].Content)
}

func testDeleteMessage(t *testing.T, e *env) {
	c := ctx(t)
	queueID, data := e.newQueue(t)
	m := e.leased(t, queueID, "done")[0]

	resp, err := data.DeleteMessage(c, queue.DeleteMessageRequest{QueueId: &queueID, MessageReceipt: &m.Receipt})
	noError(t, resp.RawResponse, err)
	e.ferry.RequireStats(t, queueID, 0, 0, 0, 0)

	// Its message is gone: the receipt acknowledges nothing more.
	_, err = data.DeleteMessage(c, queue.DeleteMessageRequest{QueueId: &queueID, MessageReceipt: &m.Receipt, RequestMetadata: once()})
	requireServiceError(t, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func testDeleteMessages(t *testing.T, e *env) {
	c := ctx(t)
	queueID, data := e.newQueue(t)
	msgs := e.leased(t, queueID, "a", "b", "c")
	// The last one is acknowledged already: its entry fails, the others succeed.
	e.ferry.DeleteAll(t, queueID, msgs[2:])

	resp, err := data.DeleteMessages(c, queue.DeleteMessagesRequest{QueueId: &queueID, DeleteMessagesDetails: queue.DeleteMessagesDetails{
		Entries: e2e.Map(msgs, func(m sdk.GetMessage) queue.DeleteMessagesDetailsEntry {
			return queue.DeleteMessagesDetailsEntry{Receipt: common.String(m.Receipt)}
		})}})
	noError(t, resp.RawResponse, err)
	requireField(t, 1, resp.ClientFailures)
	requireField(t, 0, resp.ServerFailures)
	require.Len(t, resp.Entries, 3)
	require.Nil(t, resp.Entries[0].ErrorCode)
	require.Nil(t, resp.Entries[1].ErrorCode)
	require.NotNil(t, resp.Entries[2].ErrorCode, "the failed entry's errorCode, an HTTP status")
	require.GreaterOrEqual(t, *resp.Entries[2].ErrorCode, 400)
	require.NotEmpty(t, *resp.Entries[2].ErrorMessage)
	e.ferry.RequireStats(t, queueID, 0, 0, 0, 0)
}

func testUpdateMessage(t *testing.T, e *env) {
	c := ctx(t)
	queueID, data := e.newQueue(t)
	m := e.leased(t, queueID, "slow")[0]

	resp, err := data.UpdateMessage(c, queue.UpdateMessageRequest{QueueId: &queueID, MessageReceipt: &m.Receipt,
		UpdateMessageDetails: queue.UpdateMessageDetails{VisibilityInSeconds: common.Int(1000)}})
	noError(t, resp.RawResponse, err)
	requireField(t, m.Id, resp.Id)
	require.True(t, resp.VisibleAfter.After(time.Now().Add(900*time.Second)), "extended to 1000 s: %v", resp.VisibleAfter)

	// Released at once: visible again.
	resp, err = data.UpdateMessage(c, queue.UpdateMessageRequest{QueueId: &queueID, MessageReceipt: &m.Receipt,
		UpdateMessageDetails: queue.UpdateMessageDetails{VisibilityInSeconds: common.Int(0)}})
	noError(t, resp.RawResponse, err)
	e.ferry.RequireStats(t, queueID, 1, 0, 0, 0)
}

func testUpdateMessages(t *testing.T, e *env) {
	c := ctx(t)
	queueID, data := e.newQueue(t)
	msgs := e.leased(t, queueID, "a", "b")
	e.ferry.DeleteAll(t, queueID, msgs[1:]) // its entry fails

	resp, err := data.UpdateMessages(c, queue.UpdateMessagesRequest{QueueId: &queueID, UpdateMessagesDetails: queue.UpdateMessagesDetails{
		Entries: e2e.Map(msgs, func(m sdk.GetMessage) queue.UpdateMessagesDetailsEntry {
			return queue.UpdateMessagesDetailsEntry{Receipt: common.String(m.Receipt), VisibilityInSeconds: common.Int(600)}
		})}})
	noError(t, resp.RawResponse, err)
	requireField(t, 1, resp.ClientFailures)
	requireField(t, 0, resp.ServerFailures)
	require.Len(t, resp.Entries, 2)
	requireField(t, msgs[0].Id, resp.Entries[0].Id)
	require.True(t, resp.Entries[0].VisibleAfter.After(time.Now().Add(500*time.Second)), "%v", resp.Entries[0].VisibleAfter)
	require.Nil(t, resp.Entries[0].ErrorCode)
	require.NotNil(t, resp.Entries[1].ErrorCode, "the failed entry's errorCode, an HTTP status")
	require.GreaterOrEqual(t, *resp.Entries[1].ErrorCode, 400)
	require.NotEmpty(t, *resp.Entries[1].ErrorMessage)
}

func testGetStats(t *testing.T, e *env) {
	c := ctx(t)
	queueID, data := e.newQueue(t, e2e.WithConsumerGroups(true))
	group := e.ferry.NewGroup(t, queueID, "orders", `:type = "order"`)
	e.ferry.Put(t, queueID, e2e.MsgOn("a1", "a"), e2e.MsgOn("a2", "a"), e2e.MsgOn("b1", "b"),
		e2e.WithAttrs("order", map[string]any{"type": "order"}))
	e.ferry.Get(t, queueID, e2e.Limit(1), e2e.ChannelFilter("a"), e2e.Visibility(300))

	resp, err := data.GetStats(c, queue.GetStatsRequest{QueueId: &queueID})
	noError(t, resp.RawResponse, err)
	requireField(t, int64(3), resp.Queue.VisibleMessages)
	requireField(t, int64(1), resp.Queue.InFlightMessages)
	require.Positive(t, *resp.Queue.SizeInBytes)
	requireField(t, int64(0), resp.Dlq.VisibleMessages)
	requireField(t, int64(0), resp.Dlq.InFlightMessages)

	resp, err = data.GetStats(c, queue.GetStatsRequest{QueueId: &queueID, ChannelId: common.String("a")})
	noError(t, resp.RawResponse, err)
	requireField(t, int64(1), resp.Queue.VisibleMessages)
	requireField(t, int64(1), resp.Queue.InFlightMessages)

	resp, err = data.GetStats(c, queue.GetStatsRequest{QueueId: &queueID, ConsumerGroupId: &group.Id})
	noError(t, resp.RawResponse, err)
	require.Equal(t, int64(1), *resp.Queue.VisibleMessages, "the group's filter took one message")
	requireField(t, int64(0), resp.Queue.InFlightMessages)
}

func testListChannels(t *testing.T, e *env) {
	c := ctx(t)
	queueID, data := e.newQueue(t)
	want := []string{"eu-1", "eu-2", "us-1", "us-2", "us-3"}
	e.ferry.Put(t, queueID, e2e.Map(want, func(ch string) sdk.PutMessagesDetailsEntry { return e2e.MsgOn("m", ch) })...)

	req := queue.ListChannelsRequest{QueueId: &queueID, Limit: common.Int(2)}
	var got []string
	for pages := 1; ; pages++ {
		resp, err := data.ListChannels(c, req)
		noError(t, resp.RawResponse, err)
		require.LessOrEqual(t, len(resp.Items), 2)
		got = append(got, resp.Items...)
		if resp.OpcNextPage == nil {
			break
		}
		req.Page = resp.OpcNextPage
		require.Less(t, pages, 10)
	}
	require.ElementsMatch(t, want, got)

	resp, err := data.ListChannels(c, queue.ListChannelsRequest{QueueId: &queueID, ChannelFilter: common.String("eu-*")})
	noError(t, resp.RawResponse, err)
	require.ElementsMatch(t, []string{"eu-1", "eu-2"}, resp.Items)
}
