package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// End-to-end tests of push consumers (DESIGN section 7, "Watch"): a WebSocket per consumer through the real
// router, the SDK's Watch helper, and real Postgres. A watch never holds more than its window, commit frees
// room, negative releases with a code, Shutdown releases everything, a consumer that disconnects or stops
// answering pings has its messages redelivered to the others at once, and watches work across nodes.

// fastPings makes dead consumers noticed quickly.
func fastPings(c *server.Config) {
	c.Watch.PingInterval = 100 * time.Millisecond
	c.Watch.DeadAfter = 400 * time.Millisecond
	c.Watch.Heartbeat = 200 * time.Millisecond
}

func consumerNamed(t *testing.T, list *sdk.ConsumerCollection, id string) sdk.Consumer {
	t.Helper()
	for _, c := range list.Items {
		if c.Id == id {
			return c
		}
	}
	require.FailNowf(t, "no such consumer", "%q not listed in %+v", id, list.Items)
	return sdk.Consumer{}
}

// TestWatchWindow: never more than window unacknowledged messages; each commit makes room for as many; the
// consumers API shows pending, window, slots and delivered.
func TestWatchWindow(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID)
	for i := 0; i < 10; i++ {
		c.Put(t, q, e2e.Msg("m"+string(rune('0'+i))))
	}
	w := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerID: "pusher-1", Window: 3})
	require.Equal(t, "pusher-1", w.ConsumerID)
	require.Equal(t, q, w.ConsumerGroupID, "the primary group's OCID is the queue's")
	require.Equal(t, 3, w.Window)

	first := e2e.Receive(t, w, 3, 5*time.Second)
	e2e.ReceiveNone(t, w, 300*time.Millisecond)
	for _, m := range first {
		require.Equal(t, 1, m.DeliveryCount)
	}

	list := c.Consumers(t, q)
	me := consumerNamed(t, list, "pusher-1")
	require.Equal(t, sdk.ConsumerStatusRUNNING, me.Status)
	require.Equal(t, sdk.ConsumerKindWATCH, me.Kind)
	require.EqualValues(t, 3, me.Pending)
	require.Equal(t, 3, *me.Window)
	require.Equal(t, 0, *me.Slots)
	require.False(t, *me.AutoCommit)
	require.Len(t, list.Groups, 1)
	require.EqualValues(t, 3, list.Groups[0].Pending)
	require.Equal(t, 1, list.Groups[0].Consumers)

	ctx := context.Background()
	errs, err := w.Commit(ctx, first[0].Receipt)
	require.NoError(t, err)
	require.Empty(t, errs)
	next := e2e.Receive(t, w, 1, 5*time.Second)
	e2e.ReceiveNone(t, w, 300*time.Millisecond)

	got := append(first[1:], next...)
	total := 4
	for total < 10 {
		errs, err := w.Commit(ctx, e2e.Receipts(got)...)
		require.NoError(t, err)
		require.Empty(t, errs)
		n := min(3, 10-total)
		got = e2e.Receive(t, w, n, 5*time.Second)
		total += n
	}
	errs, err = w.Commit(ctx, e2e.Receipts(got)...)
	require.NoError(t, err)
	require.Empty(t, errs)
	c.RequireStats(t, q, 0, 0, 0, 0)
	require.Eventually(t, func() bool {
		me := consumerNamed(t, c.Consumers(t, q), "pusher-1")
		return me.Delivered == 10 && me.Pending == 0 && *me.Slots == 3
	}, 5*time.Second, 50*time.Millisecond, "the heartbeat publishes delivered")

	// A receipt that is not one answers per entry; the others succeed.
	errs, err = w.Commit(ctx, "not-a-receipt")
	require.NoError(t, err)
	require.Len(t, errs, 1)
	require.Equal(t, "InvalidParameter", errs[0].Code)
}

// TestWatchNegative: a negative acknowledgement releases at once with the delivery count one higher and the
// code and reason on the message; after the dead-letter count the message is in the DLQ with its last code.
// Invalid codes are refused.
func TestWatchNegative(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID, e2e.WithDLQ(3))
	sent := c.Put(t, q, e2e.Msg("negative"))
	w := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{Window: 1})
	require.True(t, strings.HasPrefix(w.ConsumerID, "watch-"), "a generated consumer id: %q", w.ConsumerID)
	ctx := context.Background()

	m := e2e.Receive(t, w, 1, 5*time.Second)[0]
	for _, bad := range []string{"", "lower", "Too.Many.Dots", "TheCodeIsLongerThan20", "Bad-Char"} {
		_, err := w.Negative(ctx, bad, "r", m.Receipt)
		var we *sdk.WatchError
		require.ErrorAs(t, err, &we, "code %q", bad)
		require.Equal(t, "InvalidParameter", we.Code)
		require.Contains(t, we.Message, "code")
	}
	e2e.ReceiveNone(t, w, 200*time.Millisecond) // nothing was released: the window is still full

	for delivery := 1; delivery <= 3; delivery++ {
		if delivery > 1 {
			m = e2e.Receive(t, w, 1, 5*time.Second)[0]
			require.NotNil(t, m.LastNegative)
			require.Equal(t, "Timeout.Db", m.LastNegative.Code)
			require.Equal(t, "db down", *m.LastNegative.Reason)
		}
		require.Equal(t, sent[0].Id, m.Id)
		require.Equal(t, delivery, m.DeliveryCount)
		errs, err := w.Negative(ctx, "Timeout.Db", "db down", m.Receipt)
		require.NoError(t, err)
		require.Empty(t, errs)
	}
	e2e.ReceiveNone(t, w, 300*time.Millisecond)
	require.Eventually(t, func() bool { return c.Stats(t, q).Dlq.VisibleMessages == 1 }, 5*time.Second, 20*time.Millisecond)
	dead := c.Get(t, q, e2e.FromDLQ())
	require.Len(t, dead, 1)
	require.Equal(t, sent[0].Id, dead[0].Id)
	require.Equal(t, "Timeout.Db", dead[0].LastNegative.Code)
	require.Equal(t, "db down", *dead[0].LastNegative.Reason)

	// A numeric code is fine; a stale receipt fails on its own.
	c.Put(t, q, e2e.Msg("n"))
	m = e2e.Receive(t, w, 1, 5*time.Second)[0]
	errs, err := w.Negative(ctx, "503", "", m.Receipt)
	require.NoError(t, err)
	require.Empty(t, errs)
	errs, err = w.Negative(ctx, "503", "", m.Receipt)
	require.NoError(t, err)
	require.Len(t, errs, 1)
	require.Equal(t, "Conflict", errs[0].Code)
}

// TestWatchShutdown: Shutdown stops the pushing and releases what the consumer holds, at once, to the group's
// pollers; the consumer is listed as LEAVING until it disconnects, then EXIT.
func TestWatchShutdown(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID, e2e.WithVisibility(300))
	c.Put(t, q, e2e.Msg("a"), e2e.Msg("b"), e2e.Msg("c"))
	w := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerID: "leaver", Window: 5})
	held := e2e.Receive(t, w, 3, 5*time.Second)
	require.NoError(t, w.Shutdown(context.Background()))
	require.Equal(t, "LEAVING", <-w.Statuses())

	got := c.Get(t, q, e2e.Limit(10), e2e.Timeout(0))
	require.ElementsMatch(t, e2e.IDs(held), e2e.IDs(got), "released at once, not at the lease's end")
	for _, m := range got {
		require.Equal(t, 2, m.DeliveryCount)
	}
	c.Put(t, q, e2e.Msg("d"))
	e2e.ReceiveNone(t, w, 500*time.Millisecond)
	require.Equal(t, sdk.ConsumerStatusLEAVING, consumerNamed(t, c.Consumers(t, q), "leaver").Status)

	// The old receipts no longer acknowledge anything.
	errs, err := w.Commit(context.Background(), held[0].Receipt)
	require.NoError(t, err)
	require.Len(t, errs, 1)

	require.NoError(t, w.Close())
	require.Eventually(t, func() bool {
		return consumerNamed(t, c.Consumers(t, q), "leaver").Status == sdk.ConsumerStatusEXIT
	}, 5*time.Second, 20*time.Millisecond)
	c.DeleteAll(t, q, got)

	// A minute after it left, the maintainer removes it.
	_, err = srv.Pool.Exec(context.Background(), `UPDATE consumers SET left_at = now() - interval '61 seconds' WHERE consumer_id = 'leaver'`)
	require.NoError(t, err)
	srv.RunMaintainer(t)
	require.Empty(t, c.Consumers(t, q).Items)
}

// TestWatchAutoCommit: messages are acknowledged as they are sent; the window bounds frames, not the total.
func TestWatchAutoCommit(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID)
	w := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{Window: 5, AutoCommit: true})
	require.True(t, w.AutoCommit)
	var want []int64
	for i := 0; i < 5; i++ {
		sent := c.Put(t, q, e2e.Msg("a"), e2e.Msg("b"), e2e.Msg("c"), e2e.Msg("d"), e2e.Msg("e"), e2e.Msg("f"), e2e.Msg("g"), e2e.Msg("h"), e2e.Msg("i"), e2e.Msg("j"))
		for _, s := range sent {
			want = append(want, s.Id)
		}
	}
	got := e2e.Receive(t, w, 50, 10*time.Second)
	require.ElementsMatch(t, want, e2e.IDs(got))
	require.Eventually(t, func() bool { return srv.StoredMessages(t, q) == 0 }, 5*time.Second, 20*time.Millisecond)
}

// TestWatchDisconnectRebalance: a consumer that drops its connection mid-window has its messages delivered to
// the group's other consumer within a second, with delivery count 2; it is listed as EXIT.
func TestWatchDisconnectRebalance(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID, e2e.WithVisibility(300))
	a := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerID: "a", Window: 10})
	sent := c.Put(t, q, e2e.Msg("1"), e2e.Msg("2"), e2e.Msg("3"), e2e.Msg("4"), e2e.Msg("5"))
	held := e2e.Receive(t, a, 5, 5*time.Second)
	b := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerID: "b", Window: 10})
	e2e.ReceiveNone(t, b, 200*time.Millisecond)

	dropped := time.Now()
	a.Abort()
	got := e2e.Receive(t, b, 5, 2*time.Second)
	require.Less(t, time.Since(dropped), time.Second, "redelivered within a second")
	require.ElementsMatch(t, e2e.IDs(held), e2e.IDs(got))
	for _, m := range got {
		require.Equal(t, 2, m.DeliveryCount)
	}
	require.Len(t, sent, 5)
	errs, err := b.Commit(context.Background(), e2e.Receipts(got)...)
	require.NoError(t, err)
	require.Empty(t, errs)
	list := c.Consumers(t, q)
	require.Equal(t, sdk.ConsumerStatusEXIT, consumerNamed(t, list, "a").Status)
	require.Equal(t, sdk.ConsumerStatusRUNNING, consumerNamed(t, list, "b").Status)
	require.Equal(t, "b", list.Items[0].Id, "EXIT is listed last")
}

// TestWatchDeadConsumer: a consumer that stops answering pings is dead after the configured timeout; its
// messages go to a long-polling consumer of the group.
func TestWatchDeadConsumer(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t, fastPings)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID, e2e.WithVisibility(300))
	var deaf atomic.Bool
	a := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerID: "deaf", Window: 4, IgnorePings: &deaf})
	c.Put(t, q, e2e.Msg("1"), e2e.Msg("2"), e2e.Msg("3"))
	held := e2e.Receive(t, a, 3, 5*time.Second)
	e2e.ReceiveNone(t, a, 300*time.Millisecond) // pings are answered: still alive
	require.Empty(t, c.Get(t, q, e2e.Timeout(0)))

	deaf.Store(true)
	start := time.Now()
	got := c.Get(t, q, e2e.Limit(10), e2e.Timeout(5))
	require.ElementsMatch(t, e2e.IDs(held), e2e.IDs(got))
	require.Less(t, time.Since(start), 3*time.Second)
	for _, m := range got {
		require.Equal(t, 2, m.DeliveryCount)
	}
	<-a.Done()
	c.DeleteAll(t, q, got)
}

// TestWatchTwoNodes: a watch on one node receives what a producer puts on another promptly (NOTIFY), and both
// nodes list it; a consumer id holds one watch across the nodes.
func TestWatchTwoNodes(t *testing.T) {
	t.Parallel()
	one := testserver.Start(t)
	two := one.Peer(t)
	tenancyID, c1 := one.Admin(t, "watch-nodes")
	token := one.AdminToken(t, tenancyID)
	c2 := two.Client(t, token)
	q := c1.NewQueue(t, tenancyID)
	w := e2e.Watch(t, two.URL, token, q, sdk.WatchOptions{ConsumerID: "remote", Window: 10})
	select {
	case <-two.Node.Messaging().Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("node two does not listen")
	}
	for i := 0; i < 5; i++ {
		start := time.Now()
		sent := c1.Put(t, q, e2e.Msg("x"))
		got := e2e.Receive(t, w, 1, 2*time.Second)
		require.Equal(t, sent[0].Id, got[0].Id)
		require.Less(t, time.Since(start), time.Second)
		errs, err := w.Commit(context.Background(), got[0].Receipt)
		require.NoError(t, err)
		require.Empty(t, errs)
	}
	require.Equal(t, sdk.ConsumerStatusRUNNING, consumerNamed(t, c1.Consumers(t, q), "remote").Status)
	require.Equal(t, sdk.ConsumerStatusRUNNING, consumerNamed(t, c2.Consumers(t, q), "remote").Status)

	_, err := sdk.Watch(context.Background(), one.URL, q, sdk.WatchOptions{Token: token, ConsumerID: "remote"})
	var we *sdk.WatchError
	require.ErrorAs(t, err, &we)
	require.Equal(t, http.StatusTooManyRequests, we.StatusCode)
	require.Equal(t, "TooManyRequests", we.Code)
}

// TestWatchRemovedConsumer: DeleteConsumer removes a watch's consumer: its node closes the watch and its
// messages are released at once.
func TestWatchRemovedConsumer(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t) // the removal is announced (NOTIFY): no need to wait for a heartbeat
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID, e2e.WithVisibility(300))
	w := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerID: "kicked", Window: 2})
	c.Put(t, q, e2e.Msg("1"))
	held := e2e.Receive(t, w, 1, 5*time.Second)
	c.Leave(t, q, "kicked")
	select {
	case <-w.Done():
	case <-time.After(time.Second):
		t.Fatal("the watch of a removed consumer stays open")
	}
	got := c.Get(t, q, e2e.Timeout(0))
	require.Equal(t, e2e.IDs(held), e2e.IDs(got))
	require.Equal(t, sdk.ConsumerStatusEXIT, consumerNamed(t, c.Consumers(t, q), "kicked").Status)
	c.DeleteAll(t, q, got)
}

// TestWatchOrderedAndSingleActive: ordered message groups hold the next message until the previous one is
// committed, for watches as for GetMessages; on a single-active-consumer queue the second watch is STANDBY and
// takes over (with the first one's messages) when the first leaves.
func TestWatchOrderedAndSingleActive(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	ctx := context.Background()

	q := c.NewQueue(t, tenancyID)
	sent := c.Put(t, q, e2e.InGroup("g1", "g"), e2e.InGroup("g2", "g"), e2e.InGroup("g3", "g"), e2e.Msg("free"))
	w := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{Window: 10})
	got := e2e.Receive(t, w, 2, 5*time.Second)
	require.ElementsMatch(t, []int64{sent[0].Id, sent[3].Id}, e2e.IDs(got))
	e2e.ReceiveNone(t, w, 300*time.Millisecond)
	for i := 1; i < 3; i++ {
		var head sdk.GetMessage
		for _, m := range got {
			if e2e.GroupOf(m) == "g" {
				head = m
			}
		}
		errs, err := w.Commit(ctx, head.Receipt)
		require.NoError(t, err)
		require.Empty(t, errs)
		got = e2e.Receive(t, w, 1, 5*time.Second)
		require.Equal(t, sent[i].Id, got[0].Id)
	}

	sac := c.NewQueue(t, tenancyID, e2e.WithSingleActiveConsumer(30))
	first := e2e.Watch(t, srv.URL, token, sac, sdk.WatchOptions{ConsumerID: "first", Window: 10})
	c.Put(t, sac, e2e.Msg("1"), e2e.Msg("2"))
	held := e2e.Receive(t, first, 2, 5*time.Second)
	second := e2e.Watch(t, srv.URL, token, sac, sdk.WatchOptions{ConsumerID: "second", Window: 10})
	select {
	case s := <-second.Statuses():
		require.Equal(t, "STANDBY", s)
	case <-time.After(5 * time.Second):
		t.Fatal("the second watch of a single-active-consumer queue is not told it is a standby")
	}
	c.Put(t, sac, e2e.Msg("3"))
	e2e.ReceiveNone(t, second, 300*time.Millisecond)
	more := e2e.Receive(t, first, 1, 5*time.Second)
	list := c.Consumers(t, sac)
	require.Equal(t, sdk.ConsumerStatusRUNNING, consumerNamed(t, list, "first").Status)
	require.Equal(t, sdk.ConsumerStatusSTANDBY, consumerNamed(t, list, "second").Status)

	require.NoError(t, first.Close())
	took := e2e.Receive(t, second, 3, 5*time.Second)
	require.Equal(t, append(e2e.IDs(held), e2e.IDs(more)...), e2e.IDs(took), "the leaver's messages, in publish order")
	require.Equal(t, "RUNNING", second.Status())
}

// TestWatchBadInput: every refusal is a clear 4xx with the JSON error body; a bad frame is answered and the
// watch goes on.
func TestWatchBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t, func(c *server.Config) { c.Watch.MaxPerTenancy = 2 })
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID)
	ctx := context.Background()
	refused := func(opts sdk.WatchOptions, queueID string, status int, code, contains string) {
		t.Helper()
		_, err := sdk.Watch(ctx, srv.URL, queueID, opts)
		var we *sdk.WatchError
		require.ErrorAs(t, err, &we)
		require.Equal(t, status, we.StatusCode, we.Error())
		require.Equal(t, code, we.Code)
		require.Contains(t, we.Message, contains)
	}
	refused(sdk.WatchOptions{Token: token, Window: 1001}, q, http.StatusBadRequest, "InvalidParameter", "window")
	refused(sdk.WatchOptions{Token: token, Window: -1}, q, http.StatusBadRequest, "InvalidParameter", "window")
	refused(sdk.WatchOptions{Token: token, ConsumerID: "bad id!"}, q, http.StatusBadRequest, "InvalidParameter", "Consumer")
	refused(sdk.WatchOptions{Token: token, ConsumerGroupID: "nope"}, q, http.StatusNotFound, "NotAuthorizedOrNotFound", "")
	refused(sdk.WatchOptions{Token: token, ChannelFilter: "a*b"}, q, http.StatusBadRequest, "InvalidParameter", "channelFilter")
	refused(sdk.WatchOptions{}, q, http.StatusUnauthorized, "NotAuthenticated", "")
	refused(sdk.WatchOptions{Token: token}, "ocid1.queue.ferry.local."+strings.Repeat("a", 32), http.StatusNotFound, "NotAuthorizedOrNotFound", "")

	// A plain GET is not a WebSocket.
	r := srv.RawJSON(t, token, http.MethodGet, "/20210201/queues/"+q+"/messages/watch", nil)
	e2e.RequireAPIError(t, r.Status, r.Body, http.StatusUpgradeRequired, "UpgradeRequired", "WebSocket")

	// The tenancy's cap of open watches.
	e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerID: "one"})
	e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerID: "two"})
	refused(sdk.WatchOptions{Token: token, ConsumerID: "three"}, q, http.StatusTooManyRequests, "TooManyRequests", "open watches")

	// Frames that are not the protocol's are answered, and the watch goes on.
	conn, _, err := websocket.Dial(ctx, srv.URL+"/20210201/queues/"+q+"/messages/watch", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + srv.Token(t, srv.Tenancy(t, "watch-bad-2"), "admin", "Administrators")}}})
	require.Error(t, err, "another tenancy's token does not reach this queue")
	_ = conn
	other := srv.Tenancy(t, "watch-bad-3")
	otherToken := srv.Token(t, other, "admin", "Administrators")
	oq := srv.Client(t, otherToken).NewQueue(t, other)
	conn, _, err = websocket.Dial(ctx, srv.URL+"/20210201/queues/"+oq+"/messages/watch", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + otherToken}}})
	require.NoError(t, err)
	defer conn.CloseNow()
	_, hello, err := conn.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(hello), `"consumerId"`)
	for _, frame := range []string{`not json`, `{}`, `{"commit":[]}`, `{"negative":["x"],"code":"lower"}`} {
		require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(frame)))
		_, answer, err := conn.Read(ctx)
		require.NoError(t, err)
		require.Contains(t, string(answer), `"InvalidParameter"`, frame)
	}
	srv.Client(t, otherToken).Put(t, oq, e2e.Msg("still here"))
	_, pushed, err := conn.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(pushed), "still here")

	// A reason the database cannot store (it is stored with the message) is refused like a body's text: a NUL
	// reached PostgreSQL and answered InternalServerError; invalid UTF-8 was stored as U+FFFD.
	var frame struct {
		Messages []struct {
			Receipt string `json:"receipt"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(pushed, &frame))
	require.Len(t, frame.Messages, 1)
	receipt := frame.Messages[0].Receipt
	for _, reason := range []string{`"a\u0000b"`, "\"a\xffb\"", `"\udc00"`} {
		bad := `{"negative":["` + receipt + `"],"code":"Failed","reason":` + reason + `}`
		require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(bad)))
		_, answer, err := conn.Read(ctx)
		require.NoError(t, err)
		require.Contains(t, string(answer), `"InvalidParameter"`, reason)
		require.Contains(t, string(answer), "reason", reason)
	}
}

// TestWatchHandle: the SDK's handler loop commits what the handler accepts and releases what it rejects, with
// the handler's code and reason.
func TestWatchHandle(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID, e2e.WithDLQ(2))
	c.Put(t, q, e2e.Msg("ok-1"), e2e.Msg("poison"), e2e.Msg("ok-2"))
	w := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{Window: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	seen := map[string]int{}
	handled := make(chan error, 1)
	go func() {
		handled <- w.Handle(ctx, func(_ context.Context, m sdk.GetMessage) error {
			mu.Lock()
			seen[m.Content]++
			mu.Unlock()
			if m.Content == "poison" {
				return &sdk.NegativeError{Code: "Invalid.Format", Reason: "cannot parse"}
			}
			return nil
		})
	}()
	require.Eventually(t, func() bool {
		st := c.Stats(t, q)
		return st.Queue.VisibleMessages == 0 && st.Queue.InFlightMessages == 0 && st.Dlq.VisibleMessages == 1
	}, 5*time.Second, 20*time.Millisecond, "the acknowledged are gone, the poison is in the DLQ")
	cancel()
	require.ErrorIs(t, <-handled, context.Canceled)
	mu.Lock()
	require.Equal(t, map[string]int{"ok-1": 1, "ok-2": 1, "poison": 2}, seen)
	mu.Unlock()
	dead := c.Get(t, q, e2e.FromDLQ())
	require.Equal(t, "Invalid.Format", dead[0].LastNegative.Code)
}

// TestWatchQueueDeleted: a watch on a queue that is deleted closes (its consumer learns why); a watch on a deleted
// consumer group too.
func TestWatchQueueDeleted(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	g := c.NewGroup(t, q, "audit", "")
	onGroup := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerGroupID: "audit"})
	resp, err := c.DeleteConsumerGroupWithResponse(context.Background(), g.Id, &sdk.DeleteConsumerGroupParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode(), string(resp.Body))
	select {
	case <-onGroup.Done():
		require.Contains(t, onGroup.Err().Error(), "deleted")
	case <-time.After(5 * time.Second):
		t.Fatal("the watch of a deleted consumer group stays open")
	}

	onQueue := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{})
	srv.WaitWorkRequest(t, c, c.StartQueueDelete(t, q))
	select {
	case <-onQueue.Done():
		require.Contains(t, onQueue.Err().Error(), "deleted")
	case <-time.After(5 * time.Second):
		t.Fatal("the watch of a deleted queue stays open")
	}
}

// TestWatchConsumerGroups: watches of different consumer groups each receive their group's copy (fanout), and
// GET /consumers sums each group (all groups, or the one asked for).
func TestWatchConsumerGroups(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	audit := c.NewGroup(t, q, "audit", `:kind = "order"`)
	primary := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerID: "p", Window: 10})
	auditor := e2e.Watch(t, srv.URL, token, q, sdk.WatchOptions{ConsumerID: "a", ConsumerGroupID: "audit", Window: 10})
	c.Put(t, q, e2e.WithAttrs("order", map[string]any{"kind": "order"}), e2e.Msg("other"))
	require.ElementsMatch(t, []string{"order", "other"}, e2e.Contents(e2e.Receive(t, primary, 2, 5*time.Second)))
	got := e2e.Receive(t, auditor, 1, 5*time.Second)
	require.Equal(t, "order", got[0].Content)
	e2e.ReceiveNone(t, auditor, 200*time.Millisecond)

	list := c.Consumers(t, q)
	require.Len(t, list.Items, 2)
	sums := map[string]sdk.ConsumerGroupConsumers{}
	for _, g := range list.Groups {
		sums[g.ConsumerGroupId] = g
	}
	require.EqualValues(t, 2, sums[q].Pending)
	require.Equal(t, 1, sums[q].Consumers)
	require.EqualValues(t, 1, sums[audit.Id].Pending)
	require.Equal(t, 1, sums[audit.Id].Consumers)

	resp, err := c.ListConsumersWithResponse(context.Background(), q, &sdk.ListConsumersParams{ConsumerGroupId: e2e.Ptr("audit")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Len(t, resp.JSON200.Items, 1)
	require.Equal(t, "a", resp.JSON200.Items[0].Id)
	require.Equal(t, audit.Id, resp.JSON200.Items[0].ConsumerGroupId)
	require.Len(t, resp.JSON200.Groups, 1)
}
