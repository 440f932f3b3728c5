package tests

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestUpdateMessagesPerEntryErrors: each entry of updateMessages succeeds or fails on its own (valid, garbage,
// stale and deleted receipts), counted in clientFailures, each with the status it would answer alone (errorCode) and
// ferry's code; a DLQ receipt without dlq=true fails its entry.
func TestUpdateMessagesPerEntryErrors(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithDLQ(2))
	ctx := context.Background()
	c.Put(t, q, e2e.Msg("valid"), e2e.Msg("stale"), e2e.Msg("deleted"))

	valid := c.Get(t, q, e2e.Visibility(60))[0]
	staleFirst := c.Get(t, q, e2e.Visibility(1))[0]
	deleted := c.Get(t, q, e2e.Visibility(60))[0]
	require.Equal(t, []string{"valid", "stale", "deleted"}, []string{valid.Content, staleFirst.Content, deleted.Content})
	c.DeleteAll(t, q, []sdk.GetMessage{deleted})
	var staleNow sdk.GetMessage
	require.Eventually(t, func() bool {
		resp, err := c.GetMessagesWithResponse(ctx, q, &sdk.GetMessagesParams{VisibilityInSeconds: e2e.Ptr(60), TimeoutInSeconds: e2e.Ptr(0)})
		if err != nil || resp.JSON200 == nil || len(resp.JSON200.Messages) == 0 {
			return false
		}
		staleNow = resp.JSON200.Messages[0]
		return true
	}, 5*time.Second, 50*time.Millisecond, "the short lease ends and the message is leased again")
	require.Equal(t, staleFirst.Id, staleNow.Id)

	before := time.Now()
	resp, err := c.UpdateMessagesWithResponse(ctx, q, &sdk.UpdateMessagesParams{}, sdk.UpdateMessagesDetails{Entries: []sdk.UpdateMessagesDetailsEntry{
		{Receipt: valid.Receipt, VisibilityInSeconds: 300},
		{Receipt: "garbage", VisibilityInSeconds: 300},
		{Receipt: staleFirst.Receipt, VisibilityInSeconds: 300},
		{Receipt: deleted.Receipt, VisibilityInSeconds: 300},
	}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	r := resp.JSON200
	require.Equal(t, 3, r.ClientFailures)
	require.Zero(t, r.ServerFailures)
	require.Len(t, r.Entries, 4)
	require.Nil(t, r.Entries[0].ErrorCode)
	require.Nil(t, r.Entries[0].Code)
	require.Equal(t, valid.Id, *r.Entries[0].Id)
	require.WithinDuration(t, before.Add(300*time.Second), *r.Entries[0].VisibleAfter, 5*time.Second)
	wantCodes := []string{"InvalidParameter", "Conflict", "NotAuthorizedOrNotFound"}
	wantStatuses := []int{http.StatusBadRequest, http.StatusConflict, http.StatusNotFound}
	for i, code := range wantCodes {
		e := r.Entries[i+1]
		require.NotNil(t, e.ErrorCode, "entry %d", i+1)
		require.Equal(t, wantStatuses[i], *e.ErrorCode, "entry %d", i+1)
		require.Equal(t, code, *e.Code, "entry %d", i+1)
		require.NotEmpty(t, *e.ErrorMessage)
		require.Nil(t, e.Id)
		require.Nil(t, e.VisibleAfter)
	}
	// The stale receipt changed nothing: the current lease keeps its end; both leases hold.
	c.RequireStats(t, q, 0, 2, 0, 0)
	upd, err := c.UpdateMessageWithResponse(ctx, q, staleNow.Receipt, &sdk.UpdateMessageParams{}, sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, upd.StatusCode(), string(upd.Body))

	// A DLQ receipt sent to the queue (no dlq=true) fails its entry and deletes nothing.
	require.Empty(t, c.Get(t, q), "the released message exceeded its delivery count: it moved to the DLQ")
	dead := c.Get(t, q, e2e.FromDLQ())
	require.Len(t, dead, 1)
	del, err := c.DeleteMessagesWithResponse(ctx, q, &sdk.DeleteMessagesParams{}, sdk.DeleteMessagesDetails{Entries: []sdk.DeleteMessagesDetailsEntry{
		{Receipt: dead[0].Receipt}, {Receipt: valid.Receipt},
	}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, del.StatusCode(), string(del.Body))
	require.Equal(t, 1, del.JSON200.ClientFailures)
	require.Equal(t, http.StatusBadRequest, *del.JSON200.Entries[0].ErrorCode)
	require.Equal(t, "InvalidParameter", *del.JSON200.Entries[0].Code)
	require.Contains(t, *del.JSON200.Entries[0].ErrorMessage, "DLQ")
	require.Nil(t, del.JSON200.Entries[1].ErrorCode)
	c.RequireStats(t, q, 0, 0, 0, 1)
	c.DeleteAll(t, q, dead, e2e.FromDLQ())
	c.RequireStats(t, q, 0, 0, 0, 0)
}

// TestReceiptScope: a receipt works only on the queue that issued it, and a tampered receipt is rejected.
func TestReceiptScope(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	a := c.NewQueue(t, tenancyID)
	b := c.NewQueue(t, tenancyID)
	ctx := context.Background()
	c.Put(t, a, e2e.Msg("on a"))
	c.Put(t, b, e2e.Msg("on b"))
	m := c.Get(t, a, e2e.Visibility(60))[0]
	onB := c.Get(t, b, e2e.Visibility(60))[0]
	require.Equal(t, m.Id+1, onB.Id, "ids are global, so a receipt for a on b would name b's message if unscoped")

	del, err := c.DeleteMessageWithResponse(ctx, b, m.Receipt, &sdk.DeleteMessageParams{})
	require.NoError(t, err)
	e2e.RequireAPIError(t, del.StatusCode(), del.Body, http.StatusBadRequest, "InvalidParameter", "receipt")
	batch, err := c.DeleteMessagesWithResponse(ctx, b, &sdk.DeleteMessagesParams{}, sdk.DeleteMessagesDetails{
		Entries: []sdk.DeleteMessagesDetailsEntry{{Receipt: m.Receipt}},
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, batch.StatusCode())
	require.Equal(t, 1, batch.JSON200.ClientFailures)
	upd, err := c.UpdateMessageWithResponse(ctx, b, m.Receipt, &sdk.UpdateMessageParams{}, sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	require.NoError(t, err)
	e2e.RequireAPIError(t, upd.StatusCode(), upd.Body, http.StatusBadRequest, "InvalidParameter", "receipt")
	c.RequireStats(t, a, 0, 1, 0, 0)
	c.RequireStats(t, b, 0, 1, 0, 0)

	// Change any one character of the receipt to its base64url neighbour (value xor 1): never accepted, not even
	// in the last character, whose lowest bits carry no data.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range len(m.Receipt) {
		tampered := []byte(m.Receipt)
		v := strings.IndexByte(alphabet, tampered[i])
		require.GreaterOrEqual(t, v, 0, "receipts are base64url: %q", m.Receipt)
		tampered[i] = alphabet[v^1]
		del, err := c.DeleteMessageWithResponse(ctx, a, string(tampered), &sdk.DeleteMessageParams{})
		require.NoError(t, err)
		e2e.RequireAPIError(t, del.StatusCode(), del.Body, http.StatusBadRequest, "InvalidParameter", "receipt")
	}
	c.RequireStats(t, a, 0, 1, 0, 0)

	del, err = c.DeleteMessageWithResponse(ctx, a, m.Receipt, &sdk.DeleteMessageParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))
	c.RequireStats(t, a, 0, 0, 0, 0)
}

// TestStaleAndCurrentReceiptInOneBatch: a batch holding both a stale receipt and the current one of the same
// message acts on the current one only. The stale entry fails as it would alone (404 when the batch deleted the
// message, 409 when it updated it), for deleteMessages and updateMessages alike.
func TestStaleAndCurrentReceiptInOneBatch(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	ctx := context.Background()
	c.Put(t, q, e2e.Msg("one"))

	stale := c.Get(t, q, e2e.Visibility(60))[0]
	rel, err := c.UpdateMessageWithResponse(ctx, q, stale.Receipt, &sdk.UpdateMessageParams{}, sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rel.StatusCode(), string(rel.Body))
	current := c.Get(t, q, e2e.Visibility(60))[0]
	require.Equal(t, stale.Id, current.Id)
	require.NotEqual(t, stale.Receipt, current.Receipt)

	upd, err := c.UpdateMessagesWithResponse(ctx, q, &sdk.UpdateMessagesParams{}, sdk.UpdateMessagesDetails{Entries: []sdk.UpdateMessagesDetailsEntry{
		{Receipt: stale.Receipt, VisibilityInSeconds: 300},
		{Receipt: current.Receipt, VisibilityInSeconds: 120},
	}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, upd.StatusCode(), string(upd.Body))
	require.Equal(t, 1, upd.JSON200.ClientFailures)
	require.Equal(t, http.StatusConflict, *upd.JSON200.Entries[0].ErrorCode)
	require.Nil(t, upd.JSON200.Entries[1].ErrorCode)

	del, err := c.DeleteMessagesWithResponse(ctx, q, &sdk.DeleteMessagesParams{}, sdk.DeleteMessagesDetails{Entries: []sdk.DeleteMessagesDetailsEntry{
		{Receipt: stale.Receipt}, {Receipt: current.Receipt},
	}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, del.StatusCode(), string(del.Body))
	require.Equal(t, 1, del.JSON200.ClientFailures)
	require.Equal(t, http.StatusNotFound, *del.JSON200.Entries[0].ErrorCode)
	require.Nil(t, del.JSON200.Entries[1].ErrorCode)
	c.RequireStats(t, q, 0, 0, 0, 0)
}
