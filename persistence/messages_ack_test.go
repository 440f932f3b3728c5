package persistence

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An acknowledgement deletes a message only with the receipt of its current lease, and reports per receipt
// whether it deleted.
func TestMessagesDeleteNeedsTheCurrentLease(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		put := f.put(msg("a", "1", ""), msg("a", "2", ""), msg("a", "3", ""))
		first := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 3})
		require.Equal(t, put, ids(first))
		f.release(first[1])
		again := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 3})
		require.Equal(t, []int64{put[1]}, ids(again))

		stale := receiptsOf(first...) // the second one's lease has been taken over
		deleted, unblocked, err := f.r.Delete(f.ctx, f.queueID, stale)
		require.NoError(t, err)
		require.Equal(t, []bool{true, false, true}, deleted)
		require.Zero(t, unblocked)
		require.Equal(t, 1, f.stored(), "a stale receipt deletes nothing")

		exist, err := f.r.Existing(f.ctx, f.queueID, stale)
		require.NoError(t, err)
		require.Equal(t, []bool{false, true, false}, exist, "the stale receipt's message is still there")

		deleted, _, err = f.r.Delete(f.ctx, f.queueID, append(receiptsOf(again...), stale[0]))
		require.NoError(t, err)
		require.Equal(t, []bool{true, false}, deleted, "deleted with its current lease; already gone")
		require.Zero(t, f.stored())

		at, err := f.r.UpdateVisibility(f.ctx, f.queueID, receiptsOf(again...), []int32{10})
		require.NoError(t, err)
		require.Nil(t, at[0], "nothing to update")
	})
}

// A message of an ordered group waits while an earlier one is in the queue: only the group's head is leased.
// Acknowledging the head makes the next one visible, in the same statement.
func TestMessagesOrderedGroupAcknowledgeUnblocks(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		put := f.put(msg("a", "g1", "g"), msg("a", "g2", "g"), msg("a", "u", ""), msg("a", "h1", "h"))
		g1, g2, u, h1 := put[0], put[1], put[2], put[3]
		heads := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 10})
		require.Equal(t, []int64{g1, u, h1}, ids(heads), "the group's second message waits for its head")
		require.Equal(t, "g", *heads[0].MessageGroup)
		require.Nil(t, heads[1].MessageGroup)
		require.Empty(t, f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 10}), "not while the head is leased")

		queue, _, err := f.r.Stats(f.ctx, f.queueID, 0, "")
		require.NoError(t, err)
		require.Equal(t, int64(1), queue.Visible, "a waiting message counts as visible")
		require.Equal(t, int64(3), queue.InFlight)

		deleted, unblocked, err := f.r.Delete(f.ctx, f.queueID, receiptsOf(heads[0], heads[1]))
		require.NoError(t, err)
		require.Equal(t, []bool{true, true}, deleted)
		require.Equal(t, 1, unblocked, "g2 is the head now")
		next := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 10})
		require.Equal(t, []int64{g2}, ids(next))
		require.Equal(t, int32(1), next[0].DeliveryCount)

		// A group whose head has left entirely takes its next message as head at once.
		_, unblocked, err = f.r.Delete(f.ctx, f.queueID, receiptsOf(next[0], heads[2]))
		require.NoError(t, err)
		require.Zero(t, unblocked, "nothing waits behind g2 and h1")
		later := f.put(msg("a", "g3", "g"))
		require.Equal(t, later, ids(f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 10})))
	})
}

// A lease that dead-letters the head of an ordered group makes the group's next message visible in the same
// statement.
func TestMessagesOrderedGroupDeadLetterUnblocks(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		put := f.put(msg("a", "g1", "g"), msg("a", "g2", "g"))
		req := LeaseRequest{Channels: []string{"a"}, Limit: 10, MaxDeliveries: 1}
		first := f.lease(req)
		require.Equal(t, put[:1], ids(first))
		f.release(first...)
		moved := f.lease(req)
		require.Equal(t, put[:1], ids(moved), "the head's second lease moves it to the DLQ")
		require.True(t, moved[0].DeadLettered)
		next := f.lease(req)
		require.Equal(t, put[1:], ids(next), "and the group goes on with its next message")
		require.False(t, next[0].DeadLettered)
		require.Equal(t, int32(1), next[0].DeliveryCount)
	})
}

// Acknowledgements with ordered receipts share a transaction when they meet (acknowledge, as the coalescer
// runs them): each caller learns which of its own receipts deleted, a receipt two callers hold is deleted once
// and reported to both, and every acknowledged head lets its group's next message through. Through the
// coalescer, concurrent acknowledgements of many groups' heads unblock every group.
func TestMessagesOrderedAcknowledgementsCoalesce(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		var batch []NewMessage
		for _, g := range []string{"a", "b", "c"} {
			batch = append(batch, msg("ch", g+"1", g), msg("ch", g+"2", g))
		}
		put := f.put(batch...)
		heads := f.lease(LeaseRequest{Channels: []string{"ch"}, Limit: 10})
		require.Equal(t, []int64{put[0], put[2], put[4]}, ids(heads), "one head per group")

		first, second := receiptsOf(heads[0], heads[1]), receiptsOf(heads[1], heads[2])
		got, err := f.r.acknowledge(f.ctx, ackKey{queueNo: f.queueNo, queueID: f.queueID, ordered: true}, [][]Receipt{first, second})
		require.NoError(t, err)
		require.Equal(t, []bool{true, true}, got[0].deleted)
		require.Equal(t, []bool{true, true}, got[1].deleted, "b's head, deleted once, is reported to both")
		require.Equal(t, 3, got[0].unblocked)
		next := f.lease(LeaseRequest{Channels: []string{"ch"}, Limit: 10})
		require.Equal(t, []int64{put[1], put[3], put[5]}, ids(next), "each group's second message is its head now")

		// Concurrently, through Delete: 40 groups of 3, their heads acknowledged by 8 callers at once, twice over.
		batch = batch[:0]
		for g := range 40 {
			for k := range 3 {
				batch = append(batch, msg("x", fmt.Sprintf("%d/%d", g, k), fmt.Sprintf("g%d", g)))
			}
		}
		f.put(batch...)
		for round := range 3 {
			leased := f.lease(LeaseRequest{Channels: []string{"x"}, Limit: 100})
			require.Len(t, leased, 40, "round %d: every group's head, and only those", round)
			for _, m := range leased {
				require.Equal(t, fmt.Sprintf("%s/%d", (*m.MessageGroup)[1:], round), m.Content, "round %d: in publish order", round)
			}
			var wg sync.WaitGroup
			for caller := range 8 {
				wg.Go(func() {
					deleted, _, err := f.r.Delete(f.ctx, f.queueID, receiptsOf(leased[caller*5:caller*5+5]...))
					assert.NoError(t, err)
					assert.Equal(t, []bool{true, true, true, true, true}, deleted)
				})
			}
			wg.Wait()
		}
		require.Empty(t, f.lease(LeaseRequest{Channels: []string{"x"}, Limit: 100}))
	})
}
