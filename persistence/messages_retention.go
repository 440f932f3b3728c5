package persistence

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// Deleting in bulk, id watermarks and the expiry of deduplication keys (sql/messages/retention.sql).
var (
	messagesPurgePick     = stmt("messages.purge_pick")
	messagesExpirePick    = stmt("messages.expire_pick")
	messagesDeletePicked  = stmt("messages.delete_picked")
	messagesDeleteOrphans = stmt("messages.delete_orphans")
	messagesExpireBodies  = stmt("messages.expire_bodies")
	messagesLastID        = stmt("messages.last_id")
	watermarkRecord       = stmt("messages.watermark_record")
	watermarkCutoff       = stmt("messages.watermark_cutoff")
	watermarkPrune        = stmt("messages.watermark_prune")
	dedupExpire           = stmt("dedup.expire")
)

// PurgeBatch deletes up to batch messages of the queue in scope (purge.go) and returns how many. Ordered groups
// that lost their head continue with their next message.
func (r *Messages) PurgeBatch(ctx context.Context, queueID string, scope PurgeScope, batch int) (int64, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return 0, err
	}
	// nil slices are SQL NULL: no filter.
	n, err := r.deleteBatch(ctx, queueID, no, scope.DLQ, messagesPurgePick, arg{"queue_no", no}, arg{"dlq", scope.DLQ},
		arg{"group_nos", scope.GroupNos}, arg{"channel_ids", scope.ChannelIDs}, arg{"up_to", scope.UpTo}, arg{"limit", batch})
	return n, interpretError("purging messages", err)
}

// deleteBatch deletes the rows that pick selects (group_no, id, message_group) in one transaction. When some
// belong to ordered groups it takes those groups' locks before deleting — as puts and acknowledgements do: locks
// first, then rows, so no deadlock — and afterwards makes the next message of each group that lost its head
// visible, with a snapshot that sees every put that queued behind a deleted head. The other nodes are told after
// the commit.
func (r *Messages) deleteBatch(ctx context.Context, queueID string, queueNo int64, dlq *bool, pick *statement, pickArgs ...arg) (int64, error) {
	var deleted, unblocked int64
	err := InTx(ctx, r.pool, func(tx pgx.Tx) error {
		rows, err := pick.query(ctx, tx, pickArgs...)
		if err != nil {
			return err
		}
		var groupNos, lockGroupNos []int32
		var ids []int64
		var lockNames []string
		seen := map[string]bool{}
		var g int32
		var id int64
		var name *string
		if _, err := pgx.ForEachRow(rows, []any{&g, &id, &name}, func() error {
			groupNos, ids = append(groupNos, g), append(ids, id)
			// DLQ rows are out of their group's order, but one may be redriven before the delete: lock it too.
			if key := strconv.Itoa(int(g)) + "/" + deref(name); name != nil && !seen[key] {
				seen[key] = true
				lockGroupNos, lockNames = append(lockGroupNos, g), append(lockNames, *name)
			}
			return nil
		}); err != nil || len(ids) == 0 {
			return err
		}
		if len(lockNames) > 0 {
			if _, err := messagesLockGroups.exec(ctx, tx, arg{"queue_id", queueID}, arg{"group_nos", lockGroupNos}, arg{"message_groups", lockNames}); err != nil {
				return err
			}
		}
		tag, err := messagesDeletePicked.exec(ctx, tx, arg{"group_nos", groupNos}, arg{"ids", ids}, arg{"queue_no", queueNo}, arg{"dlq", dlq})
		if err != nil {
			return err
		}
		deleted = tag.RowsAffected()
		if len(lockNames) > 0 {
			return messagesUnblockGroups.queryRow(ctx, tx, arg{"group_nos", lockGroupNos}, arg{"message_groups", lockNames},
				arg{"queue_no", queueNo}).Scan(&unblocked)
		}
		return nil
	})
	if err != nil {
		return deleted, err
	}
	if unblocked > 0 {
		return deleted, Notify(ctx, r.pool, Notification{Kind: MessagesAvailable, QueueID: queueID})
	}
	return deleted, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// LastID is the highest message id allocated so far: every message published before the call has an id at or
// below it, every message published after it a higher one.
func (r *Messages) LastID(ctx context.Context) (int64, error) {
	var id int64
	err := messagesLastID.queryRow(ctx, r.pool).Scan(&id)
	return id, interpretError("reading the last message id", err)
}

// DeleteOrphans deletes up to batch messages of queues deleted in the last day (left by puts that raced the
// delete) and returns how many.
func (r *Messages) DeleteOrphans(ctx context.Context, batch int) (int64, error) {
	tag, err := messagesDeleteOrphans.exec(ctx, r.pool, arg{"limit", batch})
	return tag.RowsAffected(), interpretError("deleting messages of deleted queues", err)
}

// ReviveExpiredRanges ends the ranges of the cursor lease past their deadline in up to batch (queue, consumer
// group) pairs, as a lease of the group would (sql/messages/ranges.sql), making the messages they still hold
// visible again, and returns how many pairs it visited. Leases do this for their own group; the maintainer does
// it for the groups that nobody leases from.
func (r *Messages) ReviveExpiredRanges(ctx context.Context, batch int) (int64, error) {
	rows, err := messagesExpiredRangeGroups.query(ctx, r.pool, arg{"limit", batch})
	if err != nil {
		return 0, interpretError("reviving expired leases", err)
	}
	type group struct {
		queueNo int64
		groupNo int32
	}
	var groups []group
	var g group
	if _, err := pgx.ForEachRow(rows, []any{&g.queueNo, &g.groupNo}, func() error { groups = append(groups, g); return nil }); err != nil {
		return 0, interpretError("reviving expired leases", err)
	}
	for _, g := range groups {
		revive := &pgx.Batch{} // one transaction: the group's lease lock, then its expired ranges
		queueLeaseLock(revive, g.queueNo, g.groupNo, false)
		if err := r.pool.SendBatch(ctx, revive).Close(); err != nil {
			return 0, interpretError("reviving expired leases", err)
		}
	}
	return int64(len(groups)), nil
}

// DeleteEmptyRanges deletes up to batch ranges of the cursor lease that hold no message any more
// (sql/messages/ranges.sql), and returns how many.
func (r *Messages) DeleteEmptyRanges(ctx context.Context, batch int) (int64, error) {
	tag, err := messagesDeleteEmptyRanges.exec(ctx, r.pool, arg{"limit", batch})
	return tag.RowsAffected(), interpretError("deleting empty leases", err)
}

// ExpireBodies deletes up to batch bodies of shared messages (message_bodies) that no consumer group's row holds
// any more, and returns how many.
func (r *Messages) ExpireBodies(ctx context.Context, batch int) (int64, error) {
	tag, err := messagesExpireBodies.exec(ctx, r.pool, arg{"limit", batch})
	return tag.RowsAffected(), interpretError("deleting message bodies", err)
}

// ExpireBatch deletes up to batch messages of the queue (every consumer group, a primary-key range each) whose id
// is at or below cutoff.
func (r *Messages) ExpireBatch(ctx context.Context, queueID string, cutoff int64, batch int) (int64, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return 0, err
	}
	n, err := r.deleteBatch(ctx, queueID, no, nil, messagesExpirePick, arg{"queue_no", no}, arg{"queue_id", queueID},
		arg{"cutoff", cutoff}, arg{"limit", batch})
	return n, interpretError("expiring messages", err)
}

// RecordWatermark remembers the id sequence's position now, and forgets positions older than any retention.
func (r *Messages) RecordWatermark(ctx context.Context) error {
	if _, err := watermarkRecord.exec(ctx, r.pool); err != nil {
		return interpretError("recording id watermark", err)
	}
	_, err := watermarkPrune.exec(ctx, r.pool)
	return interpretError("pruning id watermarks", err)
}

// ExpiryCutoff is the highest message id that was allocated at least retentionSeconds ago (0 when unknown).
func (r *Messages) ExpiryCutoff(ctx context.Context, retentionSeconds int32) (int64, error) {
	var id int64
	err := watermarkCutoff.queryRow(ctx, r.pool, arg{"retention_seconds", retentionSeconds}).Scan(&id)
	return id, interpretError("expiry cutoff", err)
}

// ExpireDedupKeys deletes up to batch expired deduplication keys.
func (r *Messages) ExpireDedupKeys(ctx context.Context, batch int) (int64, error) {
	tag, err := dedupExpire.exec(ctx, r.pool, arg{"limit", batch})
	return tag.RowsAffected(), interpretError("expiring dedup keys", err)
}
