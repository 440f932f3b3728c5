package tests

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

func TestPutGetDelete(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	ctx := context.Background()

	attrs := sdk.MessageAttributes{"team": "billing", "amount": 42.5}
	ids := c.Put(t, q, e2e.Msg("one"), sdk.PutMessagesDetailsEntry{Content: "two", Attributes: &attrs}, e2e.Msg("three"))
	require.Less(t, ids[0].Id, ids[1].Id)
	require.Less(t, ids[1].Id, ids[2].Id)

	got := c.Get(t, q, e2e.Limit(10))
	require.Len(t, got, 3)
	require.Equal(t, []string{"one", "two", "three"}, []string{got[0].Content, got[1].Content, got[2].Content})
	for i := range got {
		require.Equal(t, ids[i].Id, got[i].Id, "the id PutMessages answered for entry %d is that message's", i)
	}
	require.Equal(t, 1, got[0].DeliveryCount)
	require.Equal(t, attrs, *got[1].Attributes)
	require.NotEmpty(t, got[0].Receipt)

	st := c.Stats(t, q)
	require.EqualValues(t, 0, st.Queue.VisibleMessages)
	require.EqualValues(t, 3, st.Queue.InFlightMessages)

	del, err := c.DeleteMessageWithResponse(ctx, q, got[0].Receipt, &sdk.DeleteMessageParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))

	batch, err := c.DeleteMessagesWithResponse(ctx, q, &sdk.DeleteMessagesParams{}, sdk.DeleteMessagesDetails{Entries: []sdk.DeleteMessagesDetailsEntry{
		{Receipt: got[1].Receipt}, {Receipt: "garbage"}, {Receipt: got[2].Receipt}, {Receipt: got[0].Receipt},
	}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, batch.StatusCode(), string(batch.Body))
	require.Equal(t, 2, batch.JSON200.ClientFailures)
	require.Zero(t, batch.JSON200.ServerFailures)
	require.Nil(t, batch.JSON200.Entries[0].ErrorCode)
	require.Equal(t, http.StatusBadRequest, *batch.JSON200.Entries[1].ErrorCode)
	require.Equal(t, "InvalidParameter", *batch.JSON200.Entries[1].Code)
	require.Nil(t, batch.JSON200.Entries[2].ErrorCode)
	require.Equal(t, http.StatusNotFound, *batch.JSON200.Entries[3].ErrorCode)
	require.Equal(t, "NotAuthorizedOrNotFound", *batch.JSON200.Entries[3].Code)

	st = c.Stats(t, q)
	require.EqualValues(t, 0, st.Queue.VisibleMessages+st.Queue.InFlightMessages)
}

// A GetMessages answer larger than net/http's 2 KiB chunking buffer goes out with its length (gin's render.Data
// sets it), not chunked: chunking costs framing and one more write per answer, on the hottest read path.
func TestGetMessagesAnswerHasItsLength(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	big := strings.Repeat("x", 4096)
	c.Put(t, q, e2e.Msg(big), e2e.Msg(big))

	got := srv.RawJSON(t, srv.Token(t, tenancyID, "admin", "Administrators"), http.MethodGet,
		"/20210201/queues/"+q+"/messages?limit=10", nil)
	require.Equal(t, http.StatusOK, got.Status, string(got.Body))
	require.Greater(t, len(got.Body), 8192)
	require.Equal(t, strconv.Itoa(len(got.Body)), got.Header.Get("Content-Length"))
}

// A message published without metadata.traceparent carries the publish request's trace context (its traceparent
// header) to the consumer; an explicit one wins.
func TestTraceContextTravelsWithMessages(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	const header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	explicit := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	withTraceparent := func(_ context.Context, r *http.Request) error { r.Header.Set("traceparent", header); return nil }
	resp, err := c.PutMessagesWithResponse(context.Background(), q, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: []sdk.PutMessagesDetailsEntry{
		e2e.Msg("from the header"), {Content: "explicit", Metadata: &sdk.MessageMetadata{Traceparent: &explicit}},
	}}, withTraceparent)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	got := c.Get(t, q, e2e.Limit(10))
	require.Len(t, got, 2)
	traceparents := make([]string, len(got))
	for i, m := range got {
		require.NotNil(t, m.Metadata, "message %d", i)
		require.NotNil(t, m.Metadata.Traceparent, "message %d", i)
		traceparents[i] = *m.Metadata.Traceparent
	}
	require.Equal(t, []string{header, explicit}, traceparents)
}

func TestVisibilityExpiryRedeliversAndStaleReceipt(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	ctx := context.Background()
	c.Put(t, q, e2e.Msg("m"))

	first := c.Get(t, q, e2e.Visibility(1))
	require.Len(t, first, 1)
	require.Empty(t, c.Get(t, q), "leased message is invisible")
	time.Sleep(1100 * time.Millisecond) // the lease (1 s) expires: real time passing is the subject
	second := c.Get(t, q, e2e.Visibility(30))
	require.Len(t, second, 1)
	require.Equal(t, 2, second[0].DeliveryCount)
	require.Equal(t, first[0].Id, second[0].Id)

	// The first lease's receipt is stale now: it deletes nothing and says so.
	del, err := c.DeleteMessageWithResponse(ctx, q, first[0].Receipt, &sdk.DeleteMessageParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, del.StatusCode(), string(del.Body))
	require.EqualValues(t, 1, c.Stats(t, q).Queue.InFlightMessages)

	// Extending and releasing by receipt.
	upd, err := c.UpdateMessageWithResponse(ctx, q, second[0].Receipt, &sdk.UpdateMessageParams{}, sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, upd.StatusCode(), string(upd.Body))
	require.Equal(t, second[0].Id, upd.JSON200.Id)
	third := c.Get(t, q)
	require.Len(t, third, 1)
	require.Equal(t, 3, third[0].DeliveryCount)
}

func TestDeadLetterQueueAndRedrive(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithDLQ(2))
	ctx := context.Background()
	c.Put(t, q, e2e.Msg("poison"))

	for i := 1; i <= 2; i++ {
		got := c.Get(t, q, e2e.Visibility(0))
		require.Len(t, got, 1)
		require.Equal(t, i, got[0].DeliveryCount)
	}
	require.Empty(t, c.Get(t, q), "a third delivery would exceed the DLQ count: the message moves to the DLQ")
	st := c.Stats(t, q)
	require.EqualValues(t, 1, st.Dlq.VisibleMessages)
	require.EqualValues(t, 0, st.Queue.VisibleMessages)

	dead := c.Get(t, q, e2e.FromDLQ())
	require.Len(t, dead, 1)
	require.Equal(t, "poison", dead[0].Content)
	dlq := true
	upd, err := c.UpdateMessageWithResponse(ctx, q, dead[0].Receipt, &sdk.UpdateMessageParams{Dlq: &dlq}, sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, upd.StatusCode(), string(upd.Body))

	red, err := c.RedriveMessagesWithResponse(ctx, q, &sdk.RedriveMessagesParams{}, sdk.RedriveMessagesDetails{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, red.StatusCode(), string(red.Body))
	require.Equal(t, 1, red.JSON200.RedrivenMessages)
	again := c.Get(t, q)
	require.Len(t, again, 1)
	require.Equal(t, 1, again[0].DeliveryCount)
}

func TestLongPollWakesOnPut(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)

	done := c.GetAsync(q, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(10)})
	require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
	putAt := time.Now()
	c.Put(t, q, e2e.Msg("wake"))
	r := <-done
	require.NoError(t, r.Err)
	require.Len(t, r.Msgs, 1)
	// Woken by the put, not by the 10-second timeout. The bound leaves room for a loaded 2-core machine running
	// the suite in parallel; put→receive latency is BenchmarkQueue's to measure.
	require.Less(t, r.At.Sub(putAt), time.Second)

	// Nothing arrives: the call returns after timeoutInSeconds.
	start := time.Now()
	require.Empty(t, c.Get(t, q, e2e.Timeout(1)))
	waitedAbout(t, time.Since(start), time.Second)
}
