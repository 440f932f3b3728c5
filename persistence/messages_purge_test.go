package persistence

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/fault"
)

// The purge's scope: its pick keeps to the consumer groups, the channels and the queue or DLQ it names, and to the
// messages published before it; what it names is decided when the purge is accepted (preparePurge).

// purgeFixture fills the fixture's queue with a message per (consumer group 0..2, channel a, b or the default,
// queue or DLQ), and a later one published after the purge's upTo.
func purgeFixture(t *testing.T, f *msgFixture) (upTo int64) {
	t.Helper()
	var batch []NewMessage
	for _, ch := range []string{"a", "b", ""} {
		for range 2 {
			m := msg(ch, "x", "")
			m.Groups = []int32{0, 1, 2}
			batch = append(batch, m)
		}
	}
	res, err := f.r.Put(f.ctx, f.queueID, 3600, 0, []int32{0, 1, 2}, batch)
	require.NoError(t, err)
	// The second message of each channel is in the DLQ (of every group).
	for i := 1; i < len(res); i += 2 {
		f.exec(`UPDATE messages SET dlq = true WHERE queue_no = $1 AND id = $2`, f.queueNo, res[i].ID)
	}
	upTo = res[len(res)-1].ID
	later := msg("a", "later", "")
	later.Groups = []int32{0, 1, 2}
	_, err = f.r.Put(f.ctx, f.queueID, 3600, 0, []int32{0, 1, 2}, []NewMessage{later})
	require.NoError(t, err)
	return upTo
}

// remaining lists the queue's rows as "group/channel/q|dlq/id>upTo", sorted.
func (f *msgFixture) remaining(upTo int64) []string {
	f.t.Helper()
	rows, err := f.pool.Query(f.ctx, `SELECT group_no, channel_id, dlq, id > $2 FROM messages WHERE queue_no = $1
		ORDER BY group_no, channel_id, dlq, id`, f.queueNo, upTo)
	require.NoError(f.t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var g int32
		var ch string
		var dlq, later bool
		require.NoError(f.t, rows.Scan(&g, &ch, &dlq, &later))
		out = append(out, fmt.Sprintf("%d/%s/%s%s", g, ch, map[bool]string{false: "q", true: "dlq"}[dlq], map[bool]string{true: "/later"}[later]))
	}
	require.NoError(f.t, rows.Err())
	return out
}

// kept lists the fixture's rows (as remaining does) but those that drop says are purged.
func kept(drop func(group int32, channel string, dlq bool) bool) []string {
	var want []string
	for g := int32(0); g <= 2; g++ {
		for _, ch := range []string{"", "a", "b"} {
			for _, dlq := range []bool{false, true} {
				if !drop(g, ch, dlq) {
					want = append(want, fmt.Sprintf("%d/%s/%s", g, ch, map[bool]string{false: "q", true: "dlq"}[dlq]))
				}
				if ch == "a" && !dlq {
					want = append(want, fmt.Sprintf("%d/a/q/later", g)) // published after the purge: always kept
				}
			}
		}
	}
	return want
}

func TestMessagesPurgeScope(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name  string
		scope PurgeScope // UpTo is the fixture's
		drop  func(group int32, channel string, dlq bool) bool
	}{
		{"everything", PurgeScope{}, func(int32, string, bool) bool { return true }},
		{"the queue, not the DLQ", PurgeScope{DLQ: &no}, func(_ int32, _ string, dlq bool) bool { return !dlq }},
		{"the DLQ", PurgeScope{DLQ: &yes}, func(_ int32, _ string, dlq bool) bool { return dlq }},
		{"the primary group", PurgeScope{GroupNos: []int32{0}}, func(g int32, _ string, _ bool) bool { return g == 0 }},
		{"two groups' DLQs", PurgeScope{DLQ: &yes, GroupNos: []int32{0, 2}}, func(g int32, _ string, dlq bool) bool { return dlq && g != 1 }},
		{"one channel", PurgeScope{ChannelIDs: []string{"b"}}, func(_ int32, ch string, _ bool) bool { return ch == "b" }},
		{"the default channel and a", PurgeScope{ChannelIDs: []string{"", "a"}}, func(_ int32, ch string, _ bool) bool { return ch != "b" }},
		{"a channel of a group's queue", PurgeScope{DLQ: &no, GroupNos: []int32{1}, ChannelIDs: []string{"a"}},
			func(g int32, ch string, dlq bool) bool { return g == 1 && ch == "a" && !dlq }},
		{"a group that has nothing", PurgeScope{GroupNos: []int32{7}}, func(int32, string, bool) bool { return false }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachMode(t, func(t *testing.T, f *msgFixture) {
				upTo := purgeFixture(t, f)
				scope := tc.scope
				scope.UpTo = upTo
				var total int64
				for { // in batches of 2, as the service purges in batches
					n, err := f.r.PurgeBatch(f.ctx, f.queueID, scope, 2)
					require.NoError(t, err)
					require.LessOrEqual(t, n, int64(2))
					if n == 0 {
						break
					}
					total += n
				}
				want := kept(tc.drop)
				require.Equal(t, want, f.remaining(upTo))
				require.Equal(t, int64(3*6+3-len(want)), total, "deleted rows are counted")
			})
		})
	}
}

// A purge of one group keeps the ordered groups of the others blocked as they were, and lets its own continue.
func TestMessagesPurgeScopeOrdered(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		first, second := msg("", "1", "G"), msg("", "2", "G")
		first.Groups, second.Groups = []int32{0, 1}, []int32{0, 1}
		put, err := f.r.Put(f.ctx, f.queueID, 3600, 0, []int32{0, 1}, []NewMessage{first})
		require.NoError(t, err)
		_, err = f.r.Put(f.ctx, f.queueID, 3600, 0, []int32{0, 1}, []NewMessage{second})
		require.NoError(t, err)
		n, err := f.r.PurgeBatch(f.ctx, f.queueID, PurgeScope{GroupNos: []int32{1}, UpTo: put[0].ID}, 10)
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "group 1's head only")
		got := f.lease(LeaseRequest{GroupNo: 1, Channels: []string{""}, Limit: 5})
		require.Equal(t, []string{"2"}, contents(got), "group 1 continues with its next message")
		got = f.lease(LeaseRequest{GroupNo: 0, Channels: []string{""}, Limit: 5})
		require.Equal(t, []string{"1"}, contents(got), "group 0 still holds its head, and the next waits")
	})
}

func contents(msgs []LeasedMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

// preparePurge, as a purge is accepted: the consumer groups it purges by the queue's capability and the
// request's consumerGroupId, 404 for a group that is not the queue's, and the last id published before it.
func TestQueuesStartPurge(t *testing.T) {
	eachMode(t, func(t *testing.T, f *msgFixture) {
		queues := &Queues{pool: f.pool}
		other := "ocid1.queue.other"
		f.exec(`INSERT INTO queues (tenancy_id, id, compartment_id, display_name, retention_seconds, visibility_seconds,
				timeout_seconds, dead_letter_queue_delivery_count, channel_consumption_limit, max_size_bytes, dedup_window_seconds)
			VALUES ('ocid1.tenancy.test', $1, 'ocid1.tenancy.test', 'other', 3600, 30, 0, 0, 100, 1048576, 0)`, other)
		group := func(queueID, id, name string, no int, state string) {
			f.exec(`INSERT INTO consumer_groups (tenancy_id, id, queue_id, group_no, display_name, lifecycle_state)
				VALUES ('ocid1.tenancy.test', $1, $2, $3, $4, $5)`, id, queueID, no, name, state)
		}
		group(f.queueID, f.queueID, PrimaryGroupName, 0, "ACTIVE")
		group(f.queueID, "ocid1.consumergroup.a", "Alpha", 1, "ACTIVE")
		group(f.queueID, "ocid1.consumergroup.gone", "gone", 2, "DELETED")
		group(other, "ocid1.consumergroup.elsewhere", "elsewhere", 1, "ACTIVE")
		last := f.put(msg("a", "x", ""))[0]

		n := 0
		start := func(purgeType string, channels []string, ref string) (PurgeScope, error) {
			n++
			wr, err := queues.StartWork(f.ctx, "ocid1.tenancy.test", f.queueID, nil, "", WorkRequest{
				ID: fmt.Sprintf("ocid1.workrequest.%d", n), OperationType: OpPurgeQueue, ActionType: ActionUpdated,
				Params: PurgeParams(purgeType, channels, ref)})
			if err != nil {
				return PurgeScope{}, err
			}
			// As the executor reads them: through the database, as JSON.
			stored, err := (&WorkRequests{pool: f.pool}).Get(f.ctx, "ocid1.tenancy.test", wr.ID)
			require.NoError(t, err)
			raw, _ := json.Marshal(stored.Params)
			var params map[string]any
			require.NoError(t, json.Unmarshal(raw, &params))
			require.Equal(t, stored.Params, params)
			return PurgeScopeOf(stored.Params), nil
		}
		type want struct {
			ref    string
			groups []int32
		}
		yes, no := true, false
		for _, capability := range []bool{true, false} {
			f.exec(`UPDATE queues SET consumer_groups_enabled = $2 WHERE id = $1`, f.queueID, capability)
			var cases []want
			if capability {
				cases = []want{{"", []int32{0}}, {"all", nil}, {f.queueID, []int32{0}}, {"PRIMARY", []int32{0}},
					{"ocid1.consumergroup.a", []int32{1}}, {"alpha", []int32{1}}}
			} else {
				cases = []want{{"", nil}, {"all", nil}, {f.queueID, nil}, {"primary", nil}}
			}
			for _, c := range cases {
				scope, err := start("BOTH", nil, c.ref)
				require.NoError(t, err, "capability %v, %q", capability, c.ref)
				require.Equal(t, PurgeScope{GroupNos: c.groups, UpTo: last}, scope, "capability %v, %q", capability, c.ref)
			}
			refused := []string{"ocid1.consumergroup.gone", "gone", "ocid1.consumergroup.elsewhere", "nope"}
			if !capability {
				refused = append(refused, "ocid1.consumergroup.a", "Alpha")
			}
			for _, ref := range refused {
				_, err := start("BOTH", nil, ref)
				require.True(t, fault.Is(err, fault.KindNotFound), "capability %v, %q: %v", capability, ref, err)
				require.Contains(t, err.Error(), "consumerGroupId")
				require.Contains(t, err.Error(), ref)
			}
		}
		scope, err := start("NORMAL", []string{"", "a"}, "")
		require.NoError(t, err)
		require.Equal(t, PurgeScope{DLQ: &no, ChannelIDs: []string{"", "a"}, UpTo: last}, scope)
		scope, err = start("DLQ", nil, "all")
		require.NoError(t, err)
		require.Equal(t, PurgeScope{DLQ: &yes, UpTo: last}, scope)

		var refusedRequests int
		require.NoError(t, f.pool.QueryRow(f.ctx, `SELECT $1::int - count(*) FROM work_requests`, n).Scan(&refusedRequests))
		require.Equal(t, 4+6, refusedRequests, "a refused purge leaves no work request")
		require.Nil(t, PurgeScopeOf(map[string]any{"purgeType": "BOTH", "upToMessageId": float64(last)}).GroupNos,
			"a purge accepted before groupNos existed purges every group")
	})
}
