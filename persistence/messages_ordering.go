package persistence

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Ordered message groups (sql/messages/ordering.sql). The locks and the unblocking run within the statements and
// transactions of puts (messages_put.go), acknowledgements (messages_ack.go), leases that dead-letter
// (messages_lease.go) and bulk deletes (messages_retention.go); the redrive is here.
var (
	messagesLockGroups        = stmt("messages.lock_groups")
	messagesLockReceiptGroups = stmt("messages.lock_receipt_groups")
	messagesUnblockGroups     = stmt("messages.unblock_groups")
	messagesRedrivePick       = stmt("messages.redrive_pick")
	messagesRedrive           = stmt("messages.redrive")
)

// Redrive moves up to limit of the group's DLQ messages back to the queue, oldest first, in one transaction.
// Messages of ordered groups rejoin their group's order (under the group's lock).
func (r *Messages) Redrive(ctx context.Context, queueID string, groupNo int32, limit int) (int64, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return 0, err
	}
	var n int64
	err = InTx(ctx, r.pool, func(tx pgx.Tx) error {
		rows, err := messagesRedrivePick.query(ctx, tx, arg{"queue_no", no}, arg{"group_no", groupNo}, arg{"limit", limit})
		if err != nil {
			return err
		}
		var ids []int64
		var names []*string
		var lockGroupNos []int32
		var lockNames []string
		var id int64
		var name *string
		if _, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error {
			ids, names = append(ids, id), append(names, name)
			if name != nil {
				lockGroupNos, lockNames = append(lockGroupNos, groupNo), append(lockNames, *name)
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
		tag, err := messagesRedrive.exec(ctx, tx, arg{"ids", ids}, arg{"message_groups", names}, arg{"queue_no", no}, arg{"group_no", groupNo})
		n = tag.RowsAffected()
		return err
	})
	return n, interpretError("redriving messages", err)
}
