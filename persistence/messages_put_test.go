package persistence

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A message whose deduplicationId was accepted within the window is not stored: its put answers the original's
// id and expiry (also once the original has been acknowledged, and for a repeat within the same batch). Once
// the window has passed, the id is accepted again. The window's end is moved into the past in the database
// rather than waited for.
func TestMessagesPutDeduplicates(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		const window, retention = 60, 3600
		put := func(msgs ...NewMessage) []PutResult {
			t.Helper()
			res, err := f.r.Put(f.ctx, f.queueID, retention, window, []int32{0}, msgs)
			require.NoError(t, err)
			return res
		}
		dedup := func(content, id string) NewMessage {
			m := msg("a", content, "")
			m.DedupID = id
			return m
		}
		requireDuplicate := func(original, got PutResult) {
			t.Helper()
			require.True(t, got.Duplicate)
			require.Equal(t, original.ID, got.ID)
			require.True(t, original.ExpireAt.Equal(got.ExpireAt), "expires with the original: %v, %v", original.ExpireAt, got.ExpireAt)
		}

		first := put(dedup("1", "d1"), dedup("2", "d2"), dedup("3", "d2"), msg("a", "4", ""))
		for _, i := range []int{0, 1, 3} {
			require.False(t, first[i].Duplicate)
			require.Equal(t, 1, first[i].Groups)
		}
		requireDuplicate(first[1], first[2])
		require.Equal(t, 3, f.stored(), "the repeat within the batch is not stored")

		requireDuplicate(first[0], put(dedup("5", "d1"))[0])
		require.Equal(t, 3, f.stored())

		leased := f.lease(LeaseRequest{Channels: []string{"a"}, Limit: 1})
		require.Equal(t, first[0].ID, leased[0].ID)
		deleted, _, err := f.r.Delete(f.ctx, f.queueID, receiptsOf(leased...))
		require.NoError(t, err)
		require.Equal(t, []bool{true}, deleted)
		requireDuplicate(first[0], put(dedup("6", "d1"))[0])
		require.Equal(t, 2, f.stored())

		require.EqualValues(t, 1, f.exec(`UPDATE message_dedup_keys SET expire_at = now() - interval '1 second'
			WHERE queue_id = $1 AND dedup_id = 'd1'`, f.queueID))
		again := put(dedup("7", "d1"), dedup("8", "d2"))
		require.False(t, again[0].Duplicate, "the window has passed")
		require.Greater(t, again[0].ID, first[3].ID)
		requireDuplicate(first[1], again[1])
		require.Equal(t, 3, f.stored())
		requireDuplicate(again[0], put(dedup("9", "d1"))[0])

		// The expiry sweep deletes the keys past their window only.
		f.exec(`UPDATE message_dedup_keys SET expire_at = now() - interval '1 second' WHERE queue_id = $1 AND dedup_id = 'd2'`, f.queueID)
		n, err := f.r.ExpireDedupKeys(f.ctx, 100)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		var left []string
		rows, err := f.pool.Query(f.ctx, `SELECT dedup_id FROM message_dedup_keys WHERE queue_id = $1`, f.queueID)
		require.NoError(t, err)
		for rows.Next() {
			var d string
			require.NoError(t, rows.Scan(&d))
			left = append(left, d)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []string{"d1"}, left)
	})
}

// TestMessagesOrderedPutsCoalesce: ordered puts of a queue share one transaction (insertBatches under the union of
// their message groups' locks), and each group still queues in publish order — a put's messages before those of
// a put coalesced after it — with one head per group.
func TestMessagesOrderedPutsCoalesce(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		first := []NewMessage{msg("ch", "a1", "a"), msg("ch", "b1", "b"), msg("ch", "a2", "a")}
		second := []NewMessage{msg("ch", "a3", "a"), msg("ch", "plain", ""), msg("ch", "b2", "b")}
		got, err := f.r.insertBatches(f.ctx, putKey{queueNo: f.queueNo, retentionSeconds: 3600, queueID: f.queueID},
			[][]NewMessage{first, second})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Len(t, got[0], 3)
		require.Len(t, got[1], 3)
		require.Less(t, got[0][2].ID, got[1][0].ID, "the first put's messages before the second's")
		for round, want := range [][]string{{"a1", "b1", "plain"}, {"a2", "b2"}, {"a3"}} {
			leased := f.lease(LeaseRequest{Channels: []string{"ch"}, Limit: 10})
			var contents []string
			for _, m := range leased {
				contents = append(contents, m.Content)
			}
			require.ElementsMatch(t, want, contents, "round %d: each group's head, in publish order", round)
			deleted, _, err := f.r.Delete(f.ctx, f.queueID, receiptsOf(leased...))
			require.NoError(t, err)
			require.NotContains(t, deleted, false)
		}
		require.Zero(t, f.stored())

		// Through Put, concurrently: 8 producers, each owning 5 groups, put 10 batches one after the other; every
		// group is then delivered in the order its producer put it.
		var wg sync.WaitGroup
		for p := range 8 {
			wg.Go(func() {
				for seq := range 10 {
					var batch []NewMessage
					for g := range 5 {
						group := fmt.Sprintf("p%dg%d", p, g)
						batch = append(batch, msg("x", fmt.Sprintf("%s/%d", group, seq), group))
					}
					_, err := f.r.Put(f.ctx, f.queueID, 3600, 0, []int32{0}, batch)
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		for seq := range 10 {
			leased := f.lease(LeaseRequest{Channels: []string{"x"}, Limit: 100})
			require.Len(t, leased, 40, "seq %d: every group's head, and only those", seq)
			for _, m := range leased {
				require.Equal(t, fmt.Sprintf("%s/%d", *m.MessageGroup, seq), m.Content, "seq %d: in publish order", seq)
			}
			deleted, _, err := f.r.Delete(f.ctx, f.queueID, receiptsOf(leased...))
			require.NoError(t, err)
			require.NotContains(t, deleted, false)
		}
		require.Zero(t, f.stored())
	})
}
