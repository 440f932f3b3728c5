package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// Watches of PARTITION groups (docs/partitions.md, "Watches"), through a raw WebSocket client that speaks the
// frames as documented.

// partitionWatcher is an open watch on a PARTITION group.
type partitionWatcher struct {
	t      *testing.T
	conn   *websocket.Conn
	hello  map[string]any
	frames chan partitionPush // messages frames (the GetPartitionMessages body)
	mu     sync.Mutex
	nextID int
	reps   map[string]chan watchReplyFrame
	done   chan struct{}
}

type partitionPush struct {
	Generation int64                  `json:"generation"`
	Partitions []sdk.PartitionState   `json:"partitions"`
	Messages   []sdk.PartitionMessage `json:"messages"`
}

type watchReplyFrame struct {
	ID     string          `json:"id"`
	Errors []any           `json:"errors"`
	Error  *sdk.Error      `json:"error"`
	Raw    json.RawMessage `json:"-"`
}

func openPartitionWatch(t *testing.T, srv *testserver.Server, token, queueID, group, consumer string, window int) *partitionWatcher {
	t.Helper()
	u := srv.URL + "/20210201/queues/" + url.PathEscape(queueID) + "/messages/watch?consumerGroupId=" + url.QueryEscape(group) +
		"&window=" + strconv.Itoa(window)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{
		"Authorization": {"Bearer " + token}, "X-Ferry-Consumer-Id": {consumer}}})
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	conn.SetReadLimit(64 << 20)
	_, data, err := conn.Read(ctx)
	require.NoError(t, err)
	w := &partitionWatcher{t: t, conn: conn, frames: make(chan partitionPush, 100), reps: map[string]chan watchReplyFrame{},
		done: make(chan struct{})}
	require.NoError(t, json.Unmarshal(data, &w.hello))
	go w.read()
	t.Cleanup(func() { w.close() })
	return w
}

func (w *partitionWatcher) read() {
	defer close(w.done)
	for {
		_, data, err := w.conn.Read(context.Background())
		if err != nil {
			return
		}
		var f struct {
			Reply      *watchReplyFrame `json:"reply"`
			Partitions *json.RawMessage `json:"partitions"`
		}
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		switch {
		case f.Reply != nil:
			w.mu.Lock()
			ch := w.reps[f.Reply.ID]
			w.mu.Unlock()
			if ch != nil {
				ch <- *f.Reply
			}
		case f.Partitions != nil:
			var p partitionPush
			if json.Unmarshal(data, &p) == nil {
				w.frames <- p
			}
		}
	}
}

// commit sends a commit frame and returns its reply.
func (w *partitionWatcher) commit(offsets ...sdk.PartitionOffset) watchReplyFrame {
	w.t.Helper()
	w.mu.Lock()
	w.nextID++
	id := strconv.Itoa(w.nextID)
	ch := make(chan watchReplyFrame, 1)
	w.reps[id] = ch
	w.mu.Unlock()
	data, err := json.Marshal(map[string]any{"id": id, "commit": offsets})
	require.NoError(w.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(w.t, w.conn.Write(ctx, websocket.MessageText, data))
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		w.t.Fatal("no reply to a commit frame")
		return watchReplyFrame{}
	}
}

func (w *partitionWatcher) close() {
	_ = w.conn.Close(websocket.StatusNormalClosure, "")
	<-w.done
}

// until reads frames until cond holds of the frames so far (the latest partitions and every message), within 30 s.
func (w *partitionWatcher) until(what string, cond func(owned []int, msgs []sdk.PartitionMessage) bool) ([]int, []sdk.PartitionMessage, []sdk.PartitionState) {
	w.t.Helper()
	var owned []int
	var states []sdk.PartitionState
	var msgs []sdk.PartitionMessage
	deadline := time.After(30 * time.Second)
	for owned == nil || !cond(owned, msgs) {
		select {
		case f := <-w.frames:
			owned, states = []int{}, f.Partitions
			for _, p := range f.Partitions {
				owned = append(owned, p.Partition)
			}
			msgs = append(msgs, f.Messages...)
		case <-deadline:
			w.t.Fatalf("%s: not within 30 s (partitions %v, %d messages)", what, owned, len(msgs))
		}
	}
	return owned, msgs, states
}

// partitionOfKey is the partition ferry puts a partitionKey in (fnv32a mod n).
func partitionOfKey(key string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// TestPartitionWatch: two watchers of a 3-partition queue's PARTITION group get disjoint partitions (2 + 1), are
// pushed only their partitions' messages, in offset order, commit offsets by frames (a stale generation is
// refused with StaleGeneration); when one closes, its partitions move to the other, which resumes after the
// closed one's last commit.
func TestPartitionWatch(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := newPartitioned(t, c, tenancyID, 3)

	a := openPartitionWatch(t, srv, token, q, "stream", "watch-a", 100)
	require.Equal(t, "PARTITION", a.hello["loadBalancing"])
	ownedA, _, _ := a.until("a owns every partition", func(owned []int, _ []sdk.PartitionMessage) bool { return len(owned) == 3 })
	require.Equal(t, []int{0, 1, 2}, ownedA)
	b := openPartitionWatch(t, srv, token, q, "stream", "watch-b", 100)
	ownedB, _, _ := b.until("b gets a partition", func(owned []int, _ []sdk.PartitionMessage) bool { return len(owned) == 1 })
	ownedA, _, _ = a.until("a keeps two", func(owned []int, _ []sdk.PartitionMessage) bool { return len(owned) == 2 })
	all := append(append([]int{}, ownedA...), ownedB...)
	sort.Ints(all)
	require.Equal(t, []int{0, 1, 2}, all, "disjoint, and every partition owned")
	owners := map[string][]int{}
	for _, cs := range c.GroupConsumers(t, q, "stream") {
		require.Equal(t, sdk.ConsumerKindPARTITION, cs.Kind, "a watch is a member of the group like a long-poll consumer")
		owners[cs.Id] = *cs.Partitions
	}
	require.Equal(t, map[string][]int{"watch-a": ownedA, "watch-b": ownedB}, owners)

	// 30 messages on distinct keys: each watcher is pushed exactly its partitions' messages, in offset order.
	perPartition := map[int]int{}
	for i := range 30 {
		key := fmt.Sprintf("key-%d", i)
		perPartition[partitionOfKey(key, 3)]++
		c.Put(t, q, e2e.Keyed(fmt.Sprintf("m%d", i), key))
	}
	require.Positive(t, perPartition[ownedB[0]], "the keys reach b's partition")
	want := func(owned []int) int {
		n := 0
		for _, p := range owned {
			n += perPartition[p]
		}
		return n
	}
	check := func(owned []int, msgs []sdk.PartitionMessage, states []sdk.PartitionState) {
		t.Helper()
		gen := map[int]int64{}
		for _, s := range states {
			gen[s.Partition] = s.Generation
		}
		next := map[int]int64{}
		for _, m := range msgs {
			require.Contains(t, owned, m.Partition, "a watcher is pushed only its partitions")
			require.Equal(t, gen[m.Partition], m.Generation)
			if n, ok := next[m.Partition]; ok {
				require.Equal(t, n, m.Offset, "offset order, dense")
			}
			next[m.Partition] = m.Offset + 1
		}
	}
	enough := func(n int) func([]int, []sdk.PartitionMessage) bool {
		return func(_ []int, msgs []sdk.PartitionMessage) bool { return len(msgs) >= n }
	}
	_, msgsA, statesA := a.until("a's messages", enough(want(ownedA)))
	_, msgsB, statesB := b.until("b's messages", enough(want(ownedB)))
	require.Len(t, msgsA, want(ownedA))
	require.Len(t, msgsB, want(ownedB))
	check(ownedA, msgsA, statesA)
	check(ownedB, msgsB, statesB)

	// A commit at a generation the partition does not have is refused, and commits nothing.
	last := e2e.LastOffsets(msgsB)
	stale := last[0]
	stale.Generation++
	r := b.commit(stale)
	require.NotNil(t, r.Error)
	require.Equal(t, "StaleGeneration", r.Error.Code)
	require.Nil(t, a.commit(e2e.LastOffsets(msgsA)...).Error)
	require.Nil(t, b.commit(last...).Error)

	// 30 more: b commits only the first of its new ones, then closes. Its partition moves to a, which is pushed
	// it from b's last commit on.
	for i := range 30 {
		key := fmt.Sprintf("key-%d", i)
		c.Put(t, q, e2e.Keyed(fmt.Sprintf("n%d", i), key))
	}
	_, more, _ := a.until("a's new messages", enough(want(ownedA)))
	require.Nil(t, a.commit(e2e.LastOffsets(more)...).Error)
	_, moreB, _ := b.until("b's new messages", enough(want(ownedB)))
	require.Nil(t, b.commit(e2e.LastOffsets(moreB[:1])...).Error)
	resumeAt := moreB[0].Offset + 1
	b.close()
	owned, taken, states := a.until("b's partition moves to a", func(owned []int, msgs []sdk.PartitionMessage) bool {
		return len(owned) == 3 && len(msgs) >= len(moreB)-1
	})
	require.Equal(t, []int{0, 1, 2}, owned)
	require.Len(t, taken, len(moreB)-1, "only what b did not commit: b got %+v, a got %+v", moreB, taken)
	check(owned, taken, states)
	require.Equal(t, resumeAt, taken[0].Offset, "a resumes after b's last commit")
	for _, m := range taken {
		require.Equal(t, ownedB[0], m.Partition)
	}
	require.Nil(t, a.commit(e2e.LastOffsets(taken)...).Error)
	for _, g := range *c.Stats(t, q).ConsumerGroups {
		if g.DisplayName == "stream" {
			require.EqualValues(t, 0, *g.Lag, "everything committed")
		}
	}

	// A third watch joins and gets a partition; DeleteConsumer removes it: its watch closes (it does not come back
	// by its next poll), and its partition returns to a.
	w3 := openPartitionWatch(t, srv, token, q, "stream", "watch-c", 100)
	w3.until("c gets a partition", func(owned []int, _ []sdk.PartitionMessage) bool { return len(owned) == 1 })
	a.until("a keeps two", func(owned []int, _ []sdk.PartitionMessage) bool { return len(owned) == 2 })
	c.LeaveGroup(t, q, "stream", "watch-c")
	select {
	case <-w3.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the removed consumer's watch did not close")
	}
	a.until("a owns every partition again", func(owned []int, _ []sdk.PartitionMessage) bool { return len(owned) == 3 })
	for _, cs := range c.GroupConsumers(t, q, "stream") {
		if cs.Id == "watch-c" {
			require.NotEqual(t, sdk.ConsumerStatusRUNNING, cs.Status, "the removed watch did not register again")
		}
	}
}

// TestPartitionWatchBadInput: a PARTITION watch refuses a channel filter (400 before the upgrade), answers a
// negative acknowledgement and a malformed commit with an InvalidParameter reply, and an offset past the latest
// with InvalidParameter, committing nothing.
func TestPartitionWatchBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	q := newPartitioned(t, c, tenancyID, 2)

	u := srv.URL + "/20210201/queues/" + url.PathEscape(q) + "/messages/watch?consumerGroupId=stream&channelFilter=a"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{
		"Authorization": {"Bearer " + token}, "X-Ferry-Consumer-Id": {"w"}}})
	require.Error(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	w := openPartitionWatch(t, srv, token, q, "stream", "w", 10)
	w.until("w owns both partitions", func(owned []int, _ []sdk.PartitionMessage) bool { return len(owned) == 2 })
	send := func(frame string) watchReplyFrame {
		t.Helper()
		w.mu.Lock()
		ch := make(chan watchReplyFrame, 1)
		w.reps["x"] = ch
		w.mu.Unlock()
		require.NoError(t, w.conn.Write(ctx, websocket.MessageText, []byte(frame)))
		select {
		case r := <-ch:
			return r
		case <-ctx.Done():
			t.Fatal("no reply")
			return watchReplyFrame{}
		}
	}
	for _, frame := range []string{
		`{"id":"x","negative":[],"code":"Timeout"}`,
		`{"id":"x","commit":[]}`,
		`{"id":"x","commit":[{"partition":0,"offset":5,"generation":1}]}`, // nothing was published
		`{"id":"x","commit":[{"partition":7,"offset":0,"generation":1}]}`,
	} {
		r := send(frame)
		require.NotNil(t, r.Error, frame)
		require.Equal(t, "InvalidParameter", r.Error.Code, frame)
	}
	for _, g := range *c.Stats(t, q).ConsumerGroups {
		if g.DisplayName == "stream" {
			for _, p := range *g.Partitions {
				require.EqualValues(t, -1, p.CommittedOffset, "nothing committed")
			}
		}
	}
}

// TestPartitionWatchSDK: the Go SDK's Watcher on a PARTITION group: frames on Partitions(), CommitOffsets, a
// fenced commit as a WatchError StaleGeneration.
func TestPartitionWatchSDK(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := newPartitioned(t, c, tenancyID, 2)
	w := e2e.Watch(t, srv.URL, srv.AdminToken(t, tenancyID), q, sdk.WatchOptions{ConsumerGroupID: "stream", ConsumerID: "sdk-1"})
	require.Equal(t, "PARTITION", w.LoadBalancing)
	for i := range 5 {
		c.Put(t, q, e2e.Keyed(fmt.Sprintf("m%d", i), fmt.Sprintf("key-%d", i)))
	}
	var got []sdk.PartitionMessage
	var owned []sdk.PartitionState
	deadline := time.After(30 * time.Second)
	for len(got) < 5 {
		select {
		case f := <-w.Partitions():
			owned = f.Partitions
			got = append(got, f.Messages...)
		case <-deadline:
			t.Fatalf("5 messages not pushed within 30 s (got %d)", len(got))
		}
	}
	require.Len(t, owned, 2)
	ctx := context.Background()
	stale := e2e.LastOffsets(got)[0]
	stale.Generation += 10
	var werr *sdk.WatchError
	require.ErrorAs(t, w.CommitOffsets(ctx, stale), &werr)
	require.Equal(t, "StaleGeneration", werr.Code)
	require.NoError(t, w.CommitOffsets(ctx, e2e.LastOffsets(got)...))
	for _, g := range *c.Stats(t, q).ConsumerGroups {
		if g.DisplayName == "stream" {
			require.EqualValues(t, 0, *g.Lag)
		}
	}
}
