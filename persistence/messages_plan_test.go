package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

// planNode is one node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	Operation    string     `json:"Operation"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	SubplanName  string     `json:"Subplan Name"`
	Plans        []planNode `json:"Plans"`
}

// partitionName matches the partitions of the message tables and their indexes (messages_3, messages_3_lease).
var partitionName = regexp.MustCompile(`^(messages|message_bodies)_[0-9]+(_|$)`)

// unpartitioned names a partition or its index by its partitioned table's (messages_3_lease: messages_lease).
func unpartitioned(name string) string {
	return partitionName.ReplaceAllString(name, "$1$2")
}

// scans lists the scans of table messages (of its partitions) in the node's subtree, as "Node Type/Index Name"
// of the partitioned index, without descending into the subplans that compute CTEs (which are statements of their
// own within the plan). A scan of several partitions is listed once for each.
func (n planNode) scans() []string {
	var out []string
	if unpartitioned(n.RelationName) == "messages" && n.Operation == "" {
		out = append(out, n.NodeType+"/"+unpartitioned(n.IndexName))
	}
	for _, c := range n.Plans {
		if !strings.HasPrefix(c.SubplanName, "CTE ") {
			out = append(out, c.scans()...)
		}
	}
	return out
}

// find lists the nodes of the subtree (CTEs included) that match.
func (n planNode) find(match func(planNode) bool) []planNode {
	var out []planNode
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.Plans {
		out = append(out, c.find(match)...)
	}
	return out
}

// explainPrepared is the plan of statement s for args (its text as sent: on the queue's partitions when it is
// marked so) as a prepared statement under the transaction's plan_cache_mode — force_generic_plan after
// genericPlans, as the lease runs. EXPLAIN EXECUTE plans through the plan cache, unlike an EXPLAIN of the statement
// with parameters, whose plan is always a custom one.
func explainPrepared(ctx context.Context, t *testing.T, tx pgx.Tx, s *statement, args ...arg) planNode {
	t.Helper()
	name := strings.NewReplacer(".", "_").Replace(s.name)
	_, err := tx.Exec(ctx, "PREPARE "+name+" AS "+s.text(args))
	require.NoError(t, err, s.name)
	placeholders := make([]string, len(s.params))
	for k := range placeholders {
		placeholders[k] = fmt.Sprintf("$%d", k+1)
	}
	var out string
	// The simple protocol puts the arguments into EXECUTE's text as literals, which take the prepared types.
	require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE "+name+"("+strings.Join(placeholders, ", ")+")",
		append([]any{pgx.QueryExecModeSimpleProtocol}, s.bind(args...)...)...).Scan(&out), s.name)
	var plans []struct{ Plan planNode }
	require.NoError(t, json.Unmarshal([]byte(out), &plans))
	require.Len(t, plans, 1)
	return plans[0].Plan
}

// The lease picks by the lease index and updates by primary key, in every variant and as its generic plan;
// acknowledgements (whose generic plans run too) and visibility updates find their rows by primary key, never by
// the lease index (which would scan the queue per row). Asserted on a queue of a few thousand messages, beside another queue's, after ANALYZE of
// the partitions.
func TestPlans(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := connectTest(t, testdb.New(t))
	r := NewMessages(pool, false)
	for _, no := range []int64{1, 2} {
		for range 15 {
			batch := make([]NewMessage, 200)
			for i := range batch {
				batch[i] = NewMessage{ChannelID: []string{"a", "b", "c"}[i%3], SizeBytes: 1, Content: "x",
					Groups: []int32{int32(i % 2)}}
			}
			_, err := r.insertBatches(ctx, putKey{queueNo: no, retentionSeconds: 3600}, [][]NewMessage{batch})
			require.NoError(t, err)
		}
	}
	// As autovacuum does: it analyzes the partitions, never the partitioned table itself.
	_, err := pool.Exec(ctx, `DO $$ DECLARE p regclass; BEGIN
		FOR p IN SELECT relid FROM pg_partition_tree('messages') WHERE isleaf LOOP EXECUTE 'ANALYZE ' || p; END LOOP; END $$`)
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, genericPlans)
	require.NoError(t, err)

	base := []arg{{"queue_no", int64(1)}, {"group_no", int32(0)}, {"dlq", false}, {"limit", 32},
		{"max_deliveries", int32(5)}, {"visibility_seconds", int32(30)}, {"lease_id", int64(9)}}
	for pick := range leasePicks {
		for _, deadLetter := range []bool{false, true} {
			s := leaseStatement(pick, deadLetter)
			args := append([]arg{}, base...)
			switch pick {
			case pickChannels:
				args = append(args, arg{"channels", []string{"a", "b"}}, arg{"owner", (*string)(nil)})
			case pickOne:
				args = append(args, arg{"channels", []string{"a"}}, arg{"owner", (*string)(nil)})
			case pickOwners:
				w := "watch"
				args = append(args, arg{"channels", []string{"a"}}, arg{"owners", []*string{&w, nil}})
			case pickConsumer:
				args = append(args, arg{"channels", []string{"a", "b"}}, arg{"queue_id", "q"}, arg{"consumer", "c"})
			case pickCursor:
				args = append(args, arg{"channels", []string{"a"}}, arg{"owner", (*string)(nil)})
			}
			plans := []planNode{explainPrepared(ctx, t, tx, s, args...)}
			pickIndex := "messages_lease"
			if pick == pickConsumer {
				// In publish order: the primary key is in id order, and the lease index is not (by channel, then
				// visible_at). LeaseAsConsumer runs without genericPlans, so its custom plans count as well.
				pickIndex = "messages_pkey"
				_, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_custom_plan`)
				require.NoError(t, err)
				custom := *s
				custom.name += "_custom"
				plans = append(plans, explainPrepared(ctx, t, tx, &custom, args...))
				_, err = tx.Exec(ctx, genericPlans)
				require.NoError(t, err)
			}
			for _, plan := range plans {
				assertLeasePlan(t, s.name, plan, pickIndex, deadLetter)
			}
		}
	}
	receipts := []arg{{"queue_no", int64(1)}, {"group_nos", []int32{0, 1}}, {"ids", []int64{5, 6}},
		{"lease_ids", []int64{9, 9}}, {"dlqs", []bool{false, false}}}
	for _, c := range []struct {
		s         *statement
		operation string
		args      []arg
	}{
		{messagesDelete, "Delete", receipts},
		{messagesDeleteOrdered, "Delete", receipts},
		{messagesUpdateVisibility, "Update", append(append([]arg{}, receipts...), arg{"seconds", []int32{10, 10}})},
	} {
		plan := explainPrepared(ctx, t, tx, c.s, c.args...)
		mods := plan.find(func(n planNode) bool {
			return n.NodeType == "ModifyTable" && n.Operation == c.operation && unpartitioned(n.RelationName) == "messages"
		})
		require.Len(t, mods, 1, c.s.name)
		require.Equal(t, []string{"Index Scan/messages_pkey"}, mods[0].scans(), "%s finds its rows by primary key", c.s.name)
		require.Empty(t, mods[0].find(func(n planNode) bool { return unpartitioned(n.IndexName) == "messages_lease" }),
			"%s never finds its rows by the lease index", c.s.name)
		require.Empty(t, mods[0].find(func(n planNode) bool { return n.IndexName == "message_ranges_expiry" }),
			"%s finds a receipt's range by its lease", c.s.name)
	}

	// The deletion of shared bodies after an acknowledgement probes messages' primary key per id, and
	// message_bodies' only for the ids no group's row holds any more: nothing is read sequentially.
	plan := explainPrepared(ctx, t, tx, messagesDeleteBodies, arg{"queue_no", int64(1)}, arg{"ids", []int64{5, 6}})
	probes := plan.find(func(n planNode) bool { return unpartitioned(n.RelationName) == "messages" })
	require.NotEmpty(t, probes, "delete_bodies checks messages for each id")
	for _, p := range probes {
		require.Contains(t, []string{"messages_pkey"}, unpartitioned(p.IndexName), "delete_bodies probes messages by primary key: %s", p.NodeType)
	}
	bodies := plan.find(func(n planNode) bool { return unpartitioned(n.RelationName) == "message_bodies" && n.Operation == "" })
	require.NotEmpty(t, bodies)
	for _, b := range bodies {
		require.Equal(t, "Index Scan/message_bodies_pkey", b.NodeType+"/"+unpartitioned(b.IndexName))
	}
}

// assertLeasePlan: the pick (the CTE next, picked or candidates; the cursor lease's due, picked and beyond, one
// scan each) scans messages by pickIndex only; each update of
// messages finds its rows by ctid (the lease's: the rows its pick locked) or by primary key (the unblocking of
// dead-lettering variants); nothing scans messages sequentially.
func assertLeasePlan(t *testing.T, name string, plan planNode, pickIndex string, deadLetter bool) {
	t.Helper()
	picks := plan.find(func(n planNode) bool {
		return slices.Contains([]string{"CTE next", "CTE picked", "CTE candidates", "CTE due", "CTE beyond"}, n.SubplanName)
	})
	require.NotEmpty(t, picks, name)
	var pickScans []string
	for _, p := range picks {
		pickScans = append(pickScans, p.scans()...)
	}
	wantScans := 1
	if strings.Contains(name, "_cursor") {
		wantScans = 3
	}
	require.Len(t, pickScans, wantScans, "%s picks from one partition of messages: %v", name, pickScans)
	for _, scan := range pickScans {
		require.Contains(t, []string{"Index Scan/" + pickIndex, "Index Only Scan/" + pickIndex}, scan,
			"%s picks by %s: %v", name, pickIndex, pickScans)
	}
	updates := plan.find(func(n planNode) bool { return n.NodeType == "ModifyTable" && n.Operation == "Update" })
	require.Len(t, updates, map[bool]int{false: 1, true: 2}[deadLetter], "%s: the lease, and the unblocking", name)
	for i, u := range updates {
		if i == 0 {
			require.Equal(t, []string{"Tid Scan/"}, u.scans(), "%s leases the picked rows by ctid", name)
		} else {
			require.Equal(t, []string{"Index Scan/messages_pkey"}, u.scans(), "%s unblocks by primary key", name)
		}
	}
	require.Empty(t, plan.find(func(n planNode) bool {
		return unpartitioned(n.RelationName) == "messages" && n.NodeType == "Seq Scan"
	}), name)
}
