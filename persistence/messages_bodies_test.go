package persistence

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFanoutStoredOnce: a message of three consumer groups is stored once (one body, three rows without content);
// each group leases it with its content and attributes; the body stays until the last group acknowledges, and
// goes with that acknowledgement. A message of one group keeps its content in its row, and has no body.
func TestFanoutStoredOnce(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		shared := msg("", "for everyone", "")
		shared.Groups, shared.Attributes, shared.Metadata = []int32{0, 1, 2}, []byte(`{"team":"a"}`), []byte(`{"traceparent":"x"}`)
		single := msg("", "for one", "")
		res, err := f.r.Put(f.ctx, f.queueID, 3600, 0, []int32{0, 1, 2}, []NewMessage{shared, single})
		require.NoError(t, err)
		id := res[0].ID
		count := func(sql string) (n int) {
			require.NoError(t, f.pool.QueryRow(f.ctx, sql, f.queueNo).Scan(&n))
			return n
		}
		require.Equal(t, 1, count(`SELECT count(*) FROM message_bodies WHERE queue_no = $1`))
		require.Equal(t, 3, count(`SELECT count(*) FROM messages WHERE queue_no = $1 AND content IS NULL`))
		require.Equal(t, 1, count(`SELECT count(*) FROM messages WHERE queue_no = $1 AND content IS NOT NULL`))

		for g := int32(0); g < 3; g++ {
			got := f.lease(LeaseRequest{GroupNo: g, Channels: []string{""}, Limit: 10})
			want := 1
			if g == 0 {
				want = 2
			}
			require.Len(t, got, want, "group %d", g)
			require.Equal(t, id, got[0].ID)
			require.Equal(t, "for everyone", got[0].Content, "group %d", g)
			require.JSONEq(t, `{"team":"a"}`, string(got[0].Attributes))
			require.JSONEq(t, `{"traceparent":"x"}`, string(got[0].Metadata))
			require.True(t, got[0].Shared)
			if g == 0 {
				require.Equal(t, "for one", got[1].Content)
				require.False(t, got[1].Shared)
			}
			deleted, _, err := f.r.Delete(f.ctx, f.queueID, receiptsOf(got[0]))
			require.NoError(t, err)
			require.Equal(t, []bool{true}, deleted)
			bodies := count(`SELECT count(*) FROM message_bodies WHERE queue_no = $1`)
			require.Equal(t, map[bool]int{true: 0, false: 1}[g == 2], bodies, "after group %d acknowledged", g)
		}
	})
}

// TestExpireBodies: a body left behind (its groups' rows deleted without it, as by two acknowledgements at once,
// a purge or retention) goes once no older message of its queue is stored; the bodies of live messages stay.
func TestExpireBodies(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		var msgs []NewMessage
		for i := range 4 {
			m := msg("", fmt.Sprintf("m%d", i), "")
			m.Groups = []int32{0, 1}
			msgs = append(msgs, m)
		}
		res, err := f.r.Put(f.ctx, f.queueID, 3600, 0, []int32{0, 1}, msgs)
		require.NoError(t, err)
		// The rows of the 1st and 3rd go without their bodies.
		f.exec(`DELETE FROM messages WHERE queue_no = $1 AND id = ANY ($2)`, f.queueNo, []int64{res[0].ID, res[2].ID})
		n, err := f.r.ExpireBodies(f.ctx, 100)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "the 1st: older than every stored message; the 3rd waits for the 2nd")
		f.exec(`DELETE FROM messages WHERE queue_no = $1 AND id = $2`, f.queueNo, res[1].ID)
		n, err = f.r.ExpireBodies(f.ctx, 100)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		var left []int64
		rows, err := f.pool.Query(f.ctx, `SELECT id FROM message_bodies WHERE queue_no = $1`, f.queueNo)
		require.NoError(t, err)
		for rows.Next() {
			var id int64
			require.NoError(t, rows.Scan(&id))
			left = append(left, id)
		}
		require.Equal(t, []int64{res[3].ID}, left)
		f.exec(`DELETE FROM messages WHERE queue_no = $1`, f.queueNo)
		n, err = f.r.ExpireBodies(f.ctx, 100)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "a queue without messages keeps no body")
	})
}
