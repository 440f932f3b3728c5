package persistence

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

// gatedCoalescer's first batch waits for release, so that the calls made meanwhile queue up deterministically.
type gatedCoalescer struct {
	*coalescer[string, int, int]
	release chan struct{}
	mu      sync.Mutex
	batches [][]int
}

func newGatedCoalescer(maxWeight int, fail func(items []int) error) *gatedCoalescer {
	g := &gatedCoalescer{release: make(chan struct{})}
	g.coalescer = newCoalescer(1, maxWeight, func(int) int { return 1 }, func(ctx context.Context, key string, items []int) ([]int, error) {
		g.mu.Lock()
		first := len(g.batches) == 0
		g.batches = append(g.batches, slices.Clone(items))
		g.mu.Unlock()
		if first {
			<-g.release
		}
		if fail != nil {
			if err := fail(items); err != nil {
				return nil, err
			}
		}
		out := make([]int, len(items))
		for i, it := range items {
			out[i] = it * 10
		}
		return out, nil
	})
	return g
}

// seen is the batches run so far.
func (g *gatedCoalescer) seen() [][]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.batches)
}

// waiting is how many calls of key wait for the next batch.
func (g *gatedCoalescer) waiting(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.coalescer.mu.Lock()
	defer g.coalescer.mu.Unlock()
	if k := g.running[key]; k != nil {
		return len(k.waiting)
	}
	return 0
}

// call runs item on its own goroutine and sends its result.
func (g *gatedCoalescer) call(ctx context.Context, item int, results chan<- [2]int, errs chan<- error) {
	go func() {
		res, err := g.do(ctx, "q", item)
		if err != nil {
			errs <- err
			return
		}
		results <- [2]int{item, res}
	}()
}

func TestCoalescerRunsWaitingCallsAsOneBatch(t *testing.T) {
	g := newGatedCoalescer(3, nil)
	ctx := context.Background()
	results, errs := make(chan [2]int, 10), make(chan error, 10)
	g.call(ctx, 1, results, errs)
	require.Eventually(t, func() bool { return g.waiting("q") == 0 && len(g.seen()) == 1 }, time.Second, time.Millisecond)
	for i := 2; i <= 6; i++ { // one after the other: the queue's order is the arrival order
		g.call(ctx, i, results, errs)
		require.Eventually(t, func() bool { return g.waiting("q") == i-1 }, time.Second, time.Millisecond)
	}
	close(g.release)
	got := map[int]int{}
	for range 6 {
		select {
		case r := <-results:
			got[r[0]] = r[1]
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(5 * time.Second):
			t.Fatal("a call did not return")
		}
	}
	require.Equal(t, map[int]int{1: 10, 2: 20, 3: 30, 4: 40, 5: 50, 6: 60}, got, "each call gets its own result")
	require.Equal(t, [][]int{{1}, {2, 3, 4}, {5, 6}}, g.seen(), "alone first, then in arrival order up to the weight cap")
	require.Eventually(t, func() bool {
		g.coalescer.mu.Lock()
		defer g.coalescer.mu.Unlock()
		return len(g.running) == 0
	}, time.Second, time.Millisecond, "the key is idle again")

	// Idle: a call runs at once, alone.
	res, err := g.do(ctx, "q", 7)
	require.NoError(t, err)
	require.Equal(t, 70, res)
	batches := g.seen()
	require.Equal(t, []int{7}, batches[len(batches)-1])
}

// A batch PostgreSQL rejects runs again call by call: only the bad call fails.
func TestCoalescerRunsRejectedBatchOneByOne(t *testing.T) {
	g := newGatedCoalescer(10, func(items []int) error {
		if slices.Contains(items, 3) {
			return &pgconn.PgError{Code: "22021", Message: "invalid byte sequence"}
		}
		return nil
	})
	ctx := context.Background()
	results, errs := make(chan [2]int, 10), make(chan error, 10)
	g.call(ctx, 1, results, errs)
	require.Eventually(t, func() bool { return len(g.seen()) == 1 }, time.Second, time.Millisecond)
	for i := 2; i <= 4; i++ {
		g.call(ctx, i, results, errs)
		require.Eventually(t, func() bool { return g.waiting("q") == i-1 }, time.Second, time.Millisecond)
	}
	close(g.release)
	got := map[int]int{}
	var failed []error
	for range 4 {
		select {
		case r := <-results:
			got[r[0]] = r[1]
		case err := <-errs:
			failed = append(failed, err)
		case <-time.After(5 * time.Second):
			t.Fatal("a call did not return")
		}
	}
	require.Equal(t, map[int]int{1: 10, 2: 20, 4: 40}, got)
	require.Len(t, failed, 1)
	require.ErrorContains(t, failed[0], "invalid byte sequence")
	require.Equal(t, [][]int{{1}, {2, 3, 4}, {2}, {3}, {4}}, g.seen())
}

// A waiting call whose context ends returns at once and is left out of the next batch.
func TestCoalescerWaiterCancelled(t *testing.T) {
	g := newGatedCoalescer(10, nil)
	results, errs := make(chan [2]int, 10), make(chan error, 10)
	g.call(context.Background(), 1, results, errs)
	require.Eventually(t, func() bool { return len(g.seen()) == 1 }, time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	g.call(ctx, 2, results, errs)
	require.Eventually(t, func() bool { return g.waiting("q") == 1 }, time.Second, time.Millisecond)
	g.call(context.Background(), 3, results, errs)
	require.Eventually(t, func() bool { return g.waiting("q") == 2 }, time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-errs:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	close(g.release)
	for range 2 {
		select {
		case <-results:
		case <-time.After(5 * time.Second):
			t.Fatal("a call did not return")
		}
	}
	require.Equal(t, [][]int{{1}, {3}}, g.seen())
}

// The statements behind the coalescer, each given several callers' items at once (as the coalescer does under
// load): every caller gets exactly its own messages' ids, leases and acknowledgements.
func TestCoalescedStatements(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := connectTest(t, testdb.New(t))
	r := NewMessages(pool, true)
	const queueNo = 42

	// Three puts of different sizes in one insert.
	var puts [][]NewMessage
	for caller, n := range []int{3, 1, 5} {
		var batch []NewMessage
		for k := range n {
			batch = append(batch, NewMessage{ChannelID: "ch", SizeBytes: 4, Content: fmt.Sprintf("%d/%d", caller, k), Groups: []int32{0}})
		}
		puts = append(puts, batch)
	}
	stored, err := r.insertBatches(ctx, putKey{queueNo: queueNo, retentionSeconds: 3600}, puts)
	require.NoError(t, err)
	require.Len(t, stored, 3)
	for caller, results := range stored {
		require.Len(t, results, len(puts[caller]))
		for k, res := range results {
			var content string
			require.NoError(t, pool.QueryRow(ctx, `SELECT content FROM messages WHERE queue_no = $1 AND id = $2`, queueNo, res.ID).Scan(&content))
			require.Equal(t, fmt.Sprintf("%d/%d", caller, k), content, "caller %d's message %d", caller, k)
			require.Equal(t, 1, res.Groups)
		}
	}

	// Three leases (limits 2, 4, 4) in one statement: 9 messages dealt out in id order, none twice.
	lease := LeaseRequest{GroupNo: 0, Channels: []string{"ch"}, VisibilitySeconds: 60, LeaseID: 777}
	var reqs []LeaseRequest
	for _, limit := range []int{2, 4, 4} {
		req := lease
		req.Limit = limit
		reqs = append(reqs, req)
	}
	leased, err := r.leaseBatch(ctx, leaseKey{queueNo: queueNo, channels: "ch", visibilitySeconds: 60}, reqs)
	require.NoError(t, err)
	require.Equal(t, []int{2, 4, 3}, []int{len(leased[0].leased), len(leased[1].leased), len(leased[2].leased)})
	var ids []int64
	for _, res := range leased {
		require.Nil(t, res.deleted, "no receipts to acknowledge")
		for _, m := range res.leased {
			require.Equal(t, int64(777), m.LeaseID, "held by the batch's lease")
			require.Equal(t, int32(1), m.DeliveryCount)
			ids = append(ids, m.ID)
		}
	}
	require.True(t, slices.IsSorted(ids), "dealt out in id order")
	require.Len(t, slices.Compact(slices.Clone(ids)), 9, "no message twice")

	// Two acknowledgements in one statement; a receipt both hold is deleted once and reported to both; a receipt
	// of another lease deletes nothing.
	receipt := func(id int64) Receipt { return Receipt{ID: id, LeaseID: 777} }
	first := []Receipt{receipt(ids[0]), receipt(ids[1]), receipt(ids[2])}
	second := []Receipt{receipt(ids[2]), receipt(ids[3]), {ID: ids[4], LeaseID: 1}}
	acked, err := r.acknowledge(ctx, ackKey{queueNo: queueNo}, [][]Receipt{first, second})
	require.NoError(t, err)
	require.Equal(t, [][]bool{{true, true, true}, {true, true, false}}, [][]bool{acked[0].deleted, acked[1].deleted})
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE queue_no = $1`, queueNo).Scan(&left))
	require.Equal(t, 9-4, left)

	// Leases of different owners (watches and a GetMessages) in one statement: each dealt row is held by its
	// request's owner.
	owned := []LeaseRequest{lease, lease, lease}
	owned[0].Limit, owned[0].Owner = 2, "watch-1"
	owned[1].Limit = 1
	owned[2].Limit, owned[2].Owner = 3, "watch-2"
	for i := range 6 {
		_, err := r.insertBatches(ctx, putKey{queueNo: queueNo, retentionSeconds: 3600},
			[][]NewMessage{{{ChannelID: "ch", SizeBytes: 1, Content: strconv.Itoa(i), Groups: []int32{0}}}})
		require.NoError(t, err)
	}
	dealt, err := r.leaseBatch(ctx, leaseKey{queueNo: queueNo, channels: "ch", visibilitySeconds: 60}, owned)
	require.NoError(t, err)
	for i, res := range dealt {
		require.Len(t, res.leased, owned[i].Limit)
		for _, m := range res.leased {
			var owner *string
			require.NoError(t, pool.QueryRow(ctx, `SELECT lease_owner FROM messages WHERE queue_no = $1 AND id = $2`, queueNo, m.ID).Scan(&owner))
			if owned[i].Owner == "" {
				require.Nil(t, owner, "request %d's message %d", i, m.ID)
			} else {
				require.NotNil(t, owner, "request %d's message %d", i, m.ID)
				require.Equal(t, owned[i].Owner, *owner, "request %d's message %d", i, m.ID)
			}
		}
	}

	// Through the coalescer, concurrently: every put answered with its own ids, in order.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for caller := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := make([]NewMessage, 20)
			for k := range batch {
				batch[k] = NewMessage{ChannelID: "ch", SizeBytes: 8, Content: strconv.Itoa(caller*100 + k), Groups: []int32{0}}
			}
			results, err := r.puts.do(ctx, putKey{queueNo: queueNo, retentionSeconds: 3600}, batch)
			if err != nil {
				errs <- err
				return
			}
			for k, res := range results {
				var content string
				if err := pool.QueryRow(ctx, `SELECT content FROM messages WHERE queue_no = $1 AND id = $2`, queueNo, res.ID).Scan(&content); err != nil {
					errs <- err
					return
				}
				if content != strconv.Itoa(caller*100+k) {
					errs <- fmt.Errorf("caller %d message %d: id %d holds %q", caller, k, res.ID, content)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// With two batches in flight per key, a second call runs at once beside the first; only a third waits.
func TestCoalescerRunsUpToMaxInFlightAtOnce(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var running, peak int
	var batches [][]int
	c := newCoalescer(2, 10, func(int) int { return 1 }, func(ctx context.Context, key string, items []int) ([]int, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		batches = append(batches, slices.Clone(items))
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return items, nil
	})
	inRun := func() int {
		mu.Lock()
		defer mu.Unlock()
		return running
	}
	waiting := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		if k := c.running["q"]; k != nil {
			return len(k.waiting)
		}
		return 0
	}
	var wg sync.WaitGroup
	for i := 1; i <= 4; i++ {
		wg.Go(func() {
			res, err := c.do(context.Background(), "q", i)
			require.NoError(t, err)
			require.Equal(t, i, res)
		})
		switch {
		case i <= 2:
			require.Eventually(t, func() bool { return inRun() == i }, time.Second, time.Millisecond, "call %d runs at once", i)
		default:
			require.Eventually(t, func() bool { return waiting() == i-2 }, time.Second, time.Millisecond, "call %d waits", i)
		}
	}
	close(release)
	wg.Wait()
	require.Equal(t, 2, peak)
	require.Equal(t, [][]int{{1}, {2}, {3, 4}}, batches)
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.running) == 0
	}, time.Second, time.Millisecond)
}

// Leases that carry receipts to acknowledge (LeaseAcknowledging), coalesced into one transaction: each request
// learns which of its own receipts deleted their message (a receipt of another lease deletes nothing), the
// acknowledged messages are gone before the lease picks, and the lease deals out the rest.
func TestLeaseAcknowledgingBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := connectTest(t, testdb.New(t))
	r := NewMessages(pool, true)
	const queueNo = 43
	var batch []NewMessage
	for k := range 10 {
		batch = append(batch, NewMessage{ChannelID: "ch", SizeBytes: 4, Content: strconv.Itoa(k), Groups: []int32{0}})
	}
	_, err := r.insertBatches(ctx, putKey{queueNo: queueNo, retentionSeconds: 3600}, [][]NewMessage{batch})
	require.NoError(t, err)
	lease := LeaseRequest{Channels: []string{"ch"}, VisibilitySeconds: 60, LeaseID: 5, Limit: 4}
	first, err := r.leaseBatch(ctx, leaseKey{queueNo: queueNo, channels: "ch", visibilitySeconds: 60}, []LeaseRequest{lease})
	require.NoError(t, err)
	require.Len(t, first[0].leased, 4)
	receipt := func(m LeasedMessage) Receipt { return Receipt{ID: m.ID, LeaseID: m.LeaseID} }
	held := first[0].leased

	// Two requests in one statement: the first acknowledges two of the leased messages and a receipt of a message
	// that does not exist, the second the other two; they lease 3 + 4 of the 6 left.
	a, b := lease, lease
	a.LeaseID, a.Limit = 6, 3
	a.Acknowledge = []Receipt{receipt(held[0]), {ID: held[3].ID + 1000, LeaseID: 5}, receipt(held[1])}
	b.Acknowledge = []Receipt{receipt(held[2]), receipt(held[3])}
	got, err := r.leaseBatch(ctx, leaseKey{queueNo: queueNo, channels: "ch", visibilitySeconds: 60}, []LeaseRequest{a, b})
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true}, got[0].deleted)
	require.Equal(t, []bool{true, true}, got[1].deleted)
	require.Len(t, got[0].leased, 3)
	require.Len(t, got[1].leased, 3, "6 messages were left for limits 3 + 4")
	for _, res := range got {
		for _, m := range res.leased {
			require.NotContains(t, []int64{held[0].ID, held[1].ID, held[2].ID, held[3].ID}, m.ID, "an acknowledged message is not leased again")
		}
	}
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE queue_no = $1`, queueNo).Scan(&left))
	require.Equal(t, 6, left)
}
