package persistence

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

// The repository-level tests of Messages: each runs once with coalescing (concurrent calls of a queue share
// statements) and once without, each on a database of its own with one queue.

// msgFixture is one test's repository, queue and database.
type msgFixture struct {
	t       *testing.T
	ctx     context.Context
	pool    *pgxpool.Pool
	r       *Messages
	queueID string
	queueNo int64
	leases  int64 // the last lease id handed out
}

// eachMode runs fn, in parallel, with coalescing on and off.
func eachMode(t *testing.T, fn func(t *testing.T, f *msgFixture)) {
	t.Parallel()
	for _, coalesce := range []bool{true, false} {
		t.Run(map[bool]string{true: "coalesced", false: "uncoalesced"}[coalesce], func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			t.Cleanup(cancel)
			fn(t, newMsgFixture(t, ctx, connectTest(t, testdb.New(t)), coalesce))
		})
	}
}

// newMsgFixture creates a tenancy with one queue on pool, and the repository over it.
func newMsgFixture(t *testing.T, ctx context.Context, pool *pgxpool.Pool, coalesce bool) *msgFixture {
	f := &msgFixture{t: t, ctx: ctx, pool: pool, queueID: "ocid1.queue.test"}
	f.r = NewMessages(f.pool, coalesce)
	f.exec(`INSERT INTO tenancies (id, name) VALUES ('ocid1.tenancy.test', 'test')`)
	f.exec(`INSERT INTO compartments (tenancy_id, id, name) VALUES ('ocid1.tenancy.test', 'ocid1.tenancy.test', 'root')`)
	f.exec(`INSERT INTO queues (tenancy_id, id, compartment_id, display_name, retention_seconds, visibility_seconds,
			timeout_seconds, dead_letter_queue_delivery_count, channel_consumption_limit, max_size_bytes, dedup_window_seconds)
		VALUES ('ocid1.tenancy.test', $1, 'ocid1.tenancy.test', 'q', 3600, 30, 0, 0, 100, 1048576, 0)`, f.queueID)
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT no FROM queues WHERE id = $1`, f.queueID).Scan(&f.queueNo))
	return f
}

func (f *msgFixture) exec(sql string, args ...any) int64 {
	f.t.Helper()
	tag, err := f.pool.Exec(f.ctx, sql, args...)
	require.NoError(f.t, err, sql)
	return tag.RowsAffected()
}

// msg is a message of channel ch (unordered when group is "").
func msg(ch, content, group string) NewMessage {
	return NewMessage{ChannelID: ch, SizeBytes: int32(len(content)), Content: content, MessageGroup: group, Groups: []int32{0}}
}

// put stores the messages without deduplication and returns their ids.
func (f *msgFixture) put(msgs ...NewMessage) []int64 {
	f.t.Helper()
	res, err := f.r.Put(f.ctx, f.queueID, 3600, 0, []int32{0}, msgs)
	require.NoError(f.t, err)
	ids := make([]int64, len(res))
	for i, r := range res {
		require.False(f.t, r.Duplicate)
		ids[i] = r.ID
	}
	return ids
}

// lease leases from the channels under a new lease id.
func (f *msgFixture) lease(req LeaseRequest) []LeasedMessage {
	f.t.Helper()
	f.leases++
	req.QueueID, req.LeaseID = f.queueID, f.leases
	if req.VisibilitySeconds == 0 {
		req.VisibilitySeconds = 60
	}
	got, err := f.r.Lease(f.ctx, req)
	require.NoError(f.t, err)
	return got
}

// release makes the leased messages visible again at once (a visibility of 0 seconds).
func (f *msgFixture) release(msgs ...LeasedMessage) {
	f.t.Helper()
	receipts := receiptsOf(msgs...)
	at, err := f.r.UpdateVisibility(f.ctx, f.queueID, receipts, make([]int32, len(receipts)))
	require.NoError(f.t, err)
	for i, t := range at {
		require.NotNil(f.t, t, "receipt %d holds its lease", i)
	}
}

func receiptsOf(msgs ...LeasedMessage) []Receipt {
	out := make([]Receipt, len(msgs))
	for i, m := range msgs {
		out[i] = Receipt{GroupNo: m.GroupNo, ID: m.ID, LeaseID: m.LeaseID, Ordered: m.MessageGroup != nil, Shared: m.Shared}
	}
	return out
}

func ids(msgs []LeasedMessage) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// stored counts the queue's rows.
func (f *msgFixture) stored() int {
	f.t.Helper()
	var n int
	require.NoError(f.t, f.pool.QueryRow(f.ctx, `SELECT count(*) FROM messages WHERE queue_no = $1`, f.queueNo).Scan(&n))
	return n
}

// A leased message is invisible until its lease ends: later leases take the next ones, oldest first, and each
// lease counts a delivery.
func TestMessagesLeaseVisibility(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		put := f.put(msg("a", "1", ""), msg("a", "2", ""), msg("a", "3", ""))
		before := time.Now()
		first := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 2, VisibilitySeconds: 60})
		require.Equal(t, put[:2], ids(first), "the oldest first")
		for _, m := range first {
			require.Equal(t, int32(1), m.DeliveryCount)
			require.Equal(t, f.leases, m.LeaseID)
			require.False(t, m.DeadLettered)
			require.WithinDuration(t, before.Add(60*time.Second), m.VisibleAt, 10*time.Second)
		}
		second := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 2})
		require.Equal(t, put[2:], ids(second), "the leased ones are invisible")
		require.Empty(t, f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 2}))

		f.release(first[1])
		again := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 2})
		require.Equal(t, []int64{put[1]}, ids(again), "visible again when its lease ends")
		require.Equal(t, int32(2), again[0].DeliveryCount)

		queue, dlq, err := f.r.Stats(f.ctx, f.queueID, 0, "")
		require.NoError(t, err)
		require.Equal(t, Stats{InFlight: 3, SizeBytes: 3}, queue)
		require.Equal(t, Stats{}, dlq)
	})
}

// A row that another transaction holds locked is skipped, not waited for (SKIP LOCKED); concurrent leases never
// hand out the same message twice.
func TestMessagesLeaseSkipsLocked(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		put := f.put(msg("a", "1", ""), msg("a", "2", ""))
		tx, err := f.pool.Begin(f.ctx)
		require.NoError(t, err)
		_, err = tx.Exec(f.ctx, `SELECT 1 FROM messages WHERE queue_no = $1 AND id = $2 FOR UPDATE`, f.queueNo, put[0])
		require.NoError(t, err)
		got := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 2})
		require.NoError(t, tx.Rollback(f.ctx))
		require.Equal(t, put[1:], ids(got), "the locked row is skipped")

		var batch []NewMessage
		for i := range 120 {
			batch = append(batch, msg([]string{"a", "b"}[i%2], fmt.Sprint(i), ""))
		}
		f.put(batch...)
		var mu sync.Mutex
		var leased []int64
		var errs []error
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				channels := [][]string{{"a"}, {"a", "b"}, {"b"}}[w%3]
				for {
					got, err := f.r.Lease(f.ctx, LeaseRequest{QueueID: f.queueID, Channels: channels, Limit: 7,
						VisibilitySeconds: 60, LeaseID: int64(100 + w)})
					mu.Lock()
					leased = append(leased, ids(got)...)
					if err != nil {
						errs = append(errs, err)
					}
					mu.Unlock()
					if err != nil || len(got) == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
		require.Empty(t, errs)
		slices.Sort(leased)
		require.Len(t, slices.Compact(slices.Clone(leased)), len(leased), "no message leased twice")
		require.Len(t, leased, 120+1, "every visible message leased (and the first one, unlocked again)")
	})
}

// A message delivered MaxDeliveries times moves to the DLQ at its next lease instead of being delivered, and is
// leased from the DLQ.
func TestMessagesLeaseDeadLetters(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		put := f.put(msg("a", "1", ""))
		req := LeaseRequest{Channels: []string{"a"}, Limit: 5, MaxDeliveries: 2}
		for delivery := int32(1); delivery <= 2; delivery++ {
			got := f.lease(req)
			require.Len(t, got, 1)
			require.Equal(t, delivery, got[0].DeliveryCount)
			require.False(t, got[0].DeadLettered)
			f.release(got...)
		}
		moved := f.lease(req)
		require.Len(t, moved, 1)
		require.True(t, moved[0].DeadLettered, "moved to the DLQ, not delivered")
		require.Equal(t, int32(2), moved[0].DeliveryCount, "a move is no delivery")
		require.Empty(t, f.lease(req))

		queue, dlq, err := f.r.Stats(f.ctx, f.queueID, 0, "")
		require.NoError(t, err)
		require.Equal(t, Stats{}, queue)
		require.Equal(t, Stats{Visible: 1, SizeBytes: 1}, dlq)
		fromDLQ := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 5, DLQ: true})
		require.Equal(t, put, ids(fromDLQ))
		require.False(t, fromDLQ[0].DeadLettered)
		require.Equal(t, int32(3), fromDLQ[0].DeliveryCount)
	})
}

// A lease from several channels interleaves them round-robin in the order asked (the oldest of each, then the
// second of each, …); a lease from one channel takes only that channel's.
func TestMessagesLeaseInterleavesChannels(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		put := f.put(msg("a", "a1", ""), msg("a", "a2", ""), msg("a", "a3", ""), msg("b", "b1", ""), msg("b", "b2", ""),
			msg("c", "c1", ""))
		a1, a2, a3, b1, b2, c1 := put[0], put[1], put[2], put[3], put[4], put[5]
		require.Equal(t, []int64{a1, a2, b1, c1}, ids(f.lease(LeaseRequest{Channels: []string{"c", "a", "b"}, Limit: 4})))
		require.Equal(t, []int64{b2}, ids(f.lease(LeaseRequest{Channels: []string{"b"}, Limit: 4})))
		got := f.lease(LeaseRequest{Channels: []string{"a", "b", "c"}, Limit: 4})
		require.Equal(t, []int64{a3}, ids(got))
		require.Equal(t, "a", got[0].ChannelID)
		require.Equal(t, "a3", got[0].Content)
	})
}
