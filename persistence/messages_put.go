package persistence

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Publishing (sql/messages/put.sql).
var (
	messagesInsert        = stmt("messages.insert")
	messagesInsertOneCopy = stmt("messages.insert_one_copy")
	messagesInsertOrdered = stmt("messages.insert_ordered")
	dedupClaim            = stmt("dedup.claim")
	dedupLookup           = stmt("dedup.lookup")
	dedupSet              = stmt("dedup.set")
)

// Put stores a batch in one transaction (one statement without deduplication), copying each message into the
// consumer groups it names (fanout costs rows, not round trips). groups lists all of the queue's groups (to find
// the original of a duplicate). Results are in batch order.
func (r *Messages) Put(ctx context.Context, queueID string, retentionSeconds, dedupWindowSeconds int32, groups []int32,
	msgs []NewMessage) ([]PutResult, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	results := make([]PutResult, len(msgs))
	// Each id once: one INSERT … ON CONFLICT DO UPDATE cannot touch the same key twice.
	var dedupIDs []string
	if dedupWindowSeconds > 0 {
		seen := map[string]bool{}
		for _, m := range msgs {
			if m.DedupID != "" && !seen[m.DedupID] {
				seen[m.DedupID] = true
				dedupIDs = append(dedupIDs, m.DedupID)
			}
		}
	}
	if len(dedupIDs) == 0 {
		if r.puts != nil && oneGroupEach(msgs) {
			key := putKey{queueNo: no, retentionSeconds: retentionSeconds}
			if hasOrdered(msgs) {
				key.queueID = queueID
			}
			results, err := r.puts.do(ctx, key, msgs)
			return results, interpretError("putting messages", err)
		}
		batch := &pgx.Batch{}
		release := r.queueInsert(batch, queueID, no, retentionSeconds, msgs, results, nil)
		err := r.pool.SendBatch(ctx, batch).Close() // one statement: atomic on its own
		release()
		return results, interpretError("putting messages", err)
	}
	err = InTx(ctx, r.pool, func(tx pgx.Tx) error {
		rows, err := dedupClaim.query(ctx, tx, arg{"queue_id", queueID}, arg{"window_seconds", dedupWindowSeconds},
			arg{"dedup_ids", dedupIDs})
		if err != nil {
			return err
		}
		claimedList, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		claimed := make(map[string]bool, len(claimedList))
		for _, d := range claimedList {
			claimed[d] = true
		}
		existing := map[string]PutResult{}
		if len(claimed) < len(dedupIDs) {
			rows, err := dedupLookup.query(ctx, tx, arg{"queue_no", no}, arg{"group_nos", groups},
				arg{"window_seconds", dedupWindowSeconds}, arg{"retention_seconds", retentionSeconds}, arg{"queue_id", queueID},
				arg{"dedup_ids", dedupIDs})
			if err != nil {
				return err
			}
			var d string
			var id int64
			var expire time.Time
			if _, err := pgx.ForEachRow(rows, []any{&d, &id, &expire}, func() error {
				if !claimed[d] {
					existing[d] = PutResult{ID: id, ExpireAt: expire.UTC(), Duplicate: true}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		// Decide per message: a duplicate of an earlier accepted message, of one earlier in this batch, or new.
		var fresh []NewMessage
		var freshIdx []int
		firstInBatch := map[string]int{}
		for i, m := range msgs {
			if m.DedupID != "" {
				if original, dup := existing[m.DedupID]; dup {
					results[i] = original
					continue
				}
				if j, dup := firstInBatch[m.DedupID]; dup {
					results[i] = PutResult{Duplicate: true, ID: -int64(j) - 1} // resolved below
					continue
				}
				firstInBatch[m.DedupID] = i
			}
			fresh = append(fresh, m)
			freshIdx = append(freshIdx, i)
		}
		if len(fresh) > 0 {
			batch := &pgx.Batch{}
			release := r.queueInsert(batch, queueID, no, retentionSeconds, fresh, results, freshIdx)
			err := tx.SendBatch(ctx, batch).Close()
			release()
			if err != nil {
				return err
			}
		}
		var setIDs []string
		var setMsg []int64
		for d, i := range firstInBatch {
			if claimed[d] {
				setIDs, setMsg = append(setIDs, d), append(setMsg, results[i].ID)
			}
		}
		if len(setIDs) > 0 {
			if _, err := dedupSet.exec(ctx, tx, arg{"dedup_ids", setIDs}, arg{"message_ids", setMsg}, arg{"queue_id", queueID}); err != nil {
				return err
			}
		}
		for i := range results {
			if results[i].Duplicate && results[i].ID < 0 {
				first := results[-results[i].ID-1]
				results[i].ID, results[i].ExpireAt = first.ID, first.ExpireAt
			}
		}
		return nil
	})
	return results, interpretError("putting messages", err)
}

// putKey groups the puts that can share a statement: same queue, same retention, and whether they hold ordered
// messages. Plain batches (messages.insert_one_copy) and ordered ones (their message groups locked first, then
// messages.insert_ordered) coalesce apart, so that a plain batch never pays for the locks.
type putKey struct {
	queueNo          int64
	retentionSeconds int32
	queueID          string // set for an ordered batch only (its group locks are named after it): the kinds' keys differ
}

// oneGroupEach: every message goes to exactly one consumer group. Such puts coalesce; a fanout to several groups
// (its content stored once, message_bodies) is a statement of its own, its rows already many.
func oneGroupEach(msgs []NewMessage) bool {
	return !slices.ContainsFunc(msgs, func(m NewMessage) bool { return len(m.Groups) != 1 })
}

// hasOrdered: some message belongs to an ordered message group.
func hasOrdered(msgs []NewMessage) bool {
	return slices.ContainsFunc(msgs, func(m NewMessage) bool { return m.MessageGroup != "" })
}

// insertBatches stores the batches of concurrent puts (coalescer) in one transaction — one WAL flush — and returns
// each batch's results: plain ones in one statement; ordered ones under the union of their message groups'
// locks (taken in lock_groups' global order, so that concurrent batches cannot deadlock), in one statement that
// queues each group's messages in batch order (a put's messages before those of a put coalesced after it).
func (r *Messages) insertBatches(ctx context.Context, key putKey, items [][]NewMessage) ([][]PutResult, error) {
	all := items[0]
	if len(items) > 1 {
		all = slices.Concat(items...)
	}
	results := make([]PutResult, len(all))
	batch := &pgx.Batch{}
	release := r.queueInsert(batch, key.queueID, key.queueNo, key.retentionSeconds, all, results, nil)
	err := r.pool.SendBatch(ctx, batch).Close()
	release()
	if err != nil {
		return nil, err
	}
	out := make([][]PutResult, len(items))
	for i, msgs := range items {
		out[i], results = results[:len(msgs):len(msgs)], results[len(msgs):]
	}
	return out, nil
}

// queueInsert adds the insert statement to batch; its result callback fills results (at idx[k] for the k-th
// message when idx is set). A batch with ordered messages locks their groups first (same batch or transaction:
// the lock is held until the insert commits). A batch without any pays for none of it. The contents go as one
// pre-encoded text[] (textArray); call release once the batch has been sent.
func (r *Messages) queueInsert(batch *pgx.Batch, queueID string, queueNo int64, retentionSeconds int32, msgs []NewMessage,
	results []PutResult, idx []int) (release func()) {
	n := len(msgs)
	store := func(k int, res PutResult) { // the k-th message's result
		if idx != nil {
			k = idx[k]
		}
		results[k] = res
	}
	channels, delays, sizes := make([]string, n), make([]int32, n), make([]int32, n)
	contents, attrs, metas := make([]string, n), make([]*string, n), make([]*string, n)
	messageGroups, shared := make([]*string, n), make([]bool, n)
	var pairOrd, pairGroup, lockGroupNos []int32
	var lockNames []string
	for i, m := range msgs {
		channels[i], delays[i], sizes[i], contents[i] = m.ChannelID, m.DelaySeconds, m.SizeBytes, m.Content
		attrs[i], metas[i] = jsonText(m.Attributes), jsonText(m.Metadata)
		if m.MessageGroup != "" {
			messageGroups[i] = &msgs[i].MessageGroup
		}
		shared[i] = len(m.Groups) > 1 // stored once (message_bodies), its groups' rows without content
		for _, g := range m.Groups {
			pairOrd, pairGroup = append(pairOrd, int32(i+1)), append(pairGroup, g)
			if m.MessageGroup != "" {
				lockGroupNos, lockNames = append(lockGroupNos, g), append(lockNames, m.MessageGroup)
			}
		}
	}
	contentArray := newTextArray(contents)
	release = func() { releaseTextArray(contentArray) }
	if len(lockNames) == 0 && len(pairGroup) == n {
		// One copy per message (no fanout): the plain insert.
		messagesInsertOneCopy.queue(batch, arg{"queue_no", queueNo}, arg{"retention_seconds", retentionSeconds},
			arg{"channel_ids", channels}, arg{"delays", delays}, arg{"sizes", sizes}, arg{"contents", contentArray},
			arg{"attributes", attrs}, arg{"metadata", metas}, arg{"group_nos", pairGroup}).Query(func(rows pgx.Rows) error {
			stored := make([]PutResult, 0, n)
			var res PutResult
			if _, err := pgx.ForEachRow(rows, []any{&res.ID, &res.ExpireAt}, func() error {
				stored = append(stored, res)
				return nil
			}); err != nil {
				return err
			}
			if len(stored) != n {
				return fmt.Errorf("insert stored %d messages of a batch of %d", len(stored), n)
			}
			// Ids come from the sequence in batch order: the k-th smallest is the k-th message's.
			slices.SortFunc(stored, func(a, b PutResult) int { return cmp.Compare(a.ID, b.ID) })
			for k, res := range stored {
				res.ExpireAt, res.Groups = res.ExpireAt.UTC(), 1
				store(k, res)
			}
			return nil
		})
		return release
	}
	var insert *pgx.QueuedQuery
	if len(lockNames) > 0 {
		messagesLockGroups.queue(batch, arg{"queue_id", queueID}, arg{"group_nos", lockGroupNos}, arg{"message_groups", lockNames})
		insert = messagesInsertOrdered.queue(batch, arg{"channel_ids", channels}, arg{"delays", delays}, arg{"sizes", sizes},
			arg{"contents", contentArray}, arg{"attributes", attrs}, arg{"metadata", metas}, arg{"message_groups", messageGroups},
			arg{"shared", shared}, arg{"copy_ords", pairOrd}, arg{"copy_group_nos", pairGroup}, arg{"queue_no", queueNo},
			arg{"retention_seconds", retentionSeconds})
	} else {
		insert = messagesInsert.queue(batch, arg{"channel_ids", channels}, arg{"delays", delays}, arg{"sizes", sizes},
			arg{"contents", contentArray}, arg{"attributes", attrs}, arg{"metadata", metas}, arg{"shared", shared},
			arg{"queue_no", queueNo}, arg{"retention_seconds", retentionSeconds}, arg{"copy_ords", pairOrd}, arg{"copy_group_nos", pairGroup})
	}
	insert.Query(func(rows pgx.Rows) error {
		var id, ord int64
		var expire time.Time
		_, err := pgx.ForEachRow(rows, []any{&id, &ord, &expire}, func() error {
			k := int(ord - 1)
			if k < 0 || k >= n {
				return fmt.Errorf("insert returned ordinality %d for a batch of %d", ord, n)
			}
			store(k, PutResult{ID: id, ExpireAt: expire.UTC(), Groups: len(msgs[k].Groups)})
			return nil
		})
		return err
	})
	return release
}

func jsonText(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}
