package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/fault"
)

// PrimaryGroupNo numbers the primary consumer group (whose OCID is the queue's).
const PrimaryGroupNo int32 = 0

// PrimaryGroupName is the primary group's displayName.
const PrimaryGroupName = "primary"

// ConsumerGroup is a row of consumer_groups.
type ConsumerGroup struct {
	TenancyID                    string
	ID                           string
	QueueID                      string
	GroupNo                      int32
	DisplayName                  string
	Filter                       string
	IsEnabled                    bool
	DeadLetterQueueDeliveryCount *int32 // nil = the queue's
	LoadBalancing                string // LoadBalancingMessage or LoadBalancingPartition; set at creation
	LifecycleState               string
	FreeformTags                 map[string]string
	DefinedTags                  DefinedTags
	Version                      int64
	TimeCreated                  time.Time
	TimeUpdated                  time.Time
}

// Etag of the group's current version.
func (g ConsumerGroup) Etag() string { return Etag(g.ID, g.Version) }

// IsPrimary reports whether g is the queue's primary group.
func (g ConsumerGroup) IsPrimary() bool { return g.GroupNo == PrimaryGroupNo }

// How a consumer group balances its messages over its consumers (docs/partitions.md).
const (
	LoadBalancingMessage   = "MESSAGE"   // message by message: leases and receipts (rows in messages)
	LoadBalancingPartition = "PARTITION" // partition by partition: committed offsets (partition_assignments)
)

// IsPartitioned reports whether g reads a partitioned queue by offsets.
func (g ConsumerGroup) IsPartitioned() bool { return g.LoadBalancing == LoadBalancingPartition }

// ConsumerGroupPatch holds the fields an update changes (nil = unchanged).
type ConsumerGroupPatch struct {
	DisplayName *string
	Filter      *string
	IsEnabled   *bool
	// DeadLetterQueueDeliveryCount: SetDLQCount false = unchanged; true with nil = inherit the queue's.
	SetDLQCount                  bool
	DeadLetterQueueDeliveryCount *int32
	FreeformTags                 map[string]string
	DefinedTags                  DefinedTags
}

// ConsumerGroupFilter selects groups for a list.
type ConsumerGroupFilter struct {
	QueueID        string
	DisplayName    string
	ID             string
	LifecycleState string // "" = all but DELETED
}

// ConsumerGroups is the repository of consumer_groups.
type ConsumerGroups struct {
	pool   *pgxpool.Pool
	quotas *Quotas // the count quota checked by Create
}

const consumerGroupColumns = `tenancy_id, id, queue_id, group_no, display_name, filter, is_enabled,
	dead_letter_queue_delivery_count, lifecycle_state, freeform_tags, defined_tags, version, time_created, time_updated,
	load_balancing`

const (
	consumerGroupGet = `SELECT ` + consumerGroupColumns + ` FROM consumer_groups
		WHERE tenancy_id = $1 AND id = $2 AND lifecycle_state <> 'DELETED' ORDER BY group_no LIMIT 1`
	consumerGroupGetLocked = `SELECT ` + consumerGroupColumns + ` FROM consumer_groups
		WHERE tenancy_id = $1 AND id = $2 AND lifecycle_state <> 'DELETED' FOR UPDATE`
	consumerGroupInsert = `INSERT INTO consumer_groups (tenancy_id, id, queue_id, group_no, display_name, filter, is_enabled,
			dead_letter_queue_delivery_count, freeform_tags, defined_tags, load_balancing)
		VALUES ($1, $2, $3, (SELECT coalesce(max(group_no), 0) + 1 FROM consumer_groups WHERE queue_id = $3), $4, $5, $6, $7, $8, $9,
			coalesce(nullif($10, ''), 'MESSAGE'))
		RETURNING ` + consumerGroupColumns
	// The primary group: created with the capability (named "primary" unless named otherwise), or changed. An
	// empty name and NULL filter keep the group's; $6 says whether $7 sets the dead-letter count.
	consumerGroupUpsertPrimary = `INSERT INTO consumer_groups (tenancy_id, id, queue_id, group_no, display_name, is_enabled, filter,
			dead_letter_queue_delivery_count)
		VALUES ($1, $2, $2, 0, coalesce(nullif($4, ''), '` + PrimaryGroupName + `'), $3, coalesce($5, ''), $7)
		ON CONFLICT (queue_id, group_no) DO UPDATE SET is_enabled = excluded.is_enabled,
			display_name = coalesce(nullif($4, ''), consumer_groups.display_name), filter = coalesce($5, consumer_groups.filter),
			dead_letter_queue_delivery_count = CASE WHEN $6 THEN $7 ELSE consumer_groups.dead_letter_queue_delivery_count END,
			version = consumer_groups.version + 1, time_updated = now()`
	consumerGroupUpdate = `UPDATE consumer_groups SET display_name = coalesce($3, display_name), filter = coalesce($4, filter),
		is_enabled = coalesce($5, is_enabled),
		dead_letter_queue_delivery_count = CASE WHEN $6 THEN $7 ELSE dead_letter_queue_delivery_count END,
		freeform_tags = coalesce($8, freeform_tags), defined_tags = coalesce($10, defined_tags), version = version + 1,
		time_updated = now()
		WHERE tenancy_id = $1 AND id = $2 AND queue_id = $9 RETURNING ` + consumerGroupColumns
	consumerGroupMarkDeleted = `UPDATE consumer_groups SET lifecycle_state = 'DELETED', version = version + 1, time_updated = now()
		WHERE tenancy_id = $1 AND id = $2 AND queue_id = $3`
	// The cursor leases' state (message_cursors, message_ranges: sql/messages/lease.sql) of a deleted group ($2),
	// or of every group of a deleted queue ($2 NULL): no lease reads it again (group numbers are never reused),
	// and the group's messages go with the maintainer's purge. A lease already under way when the group is
	// deleted may write its cursor again; that row stays, as small as it is.
	leaseStateDelete = `WITH q AS MATERIALIZED (SELECT ` + queueNoOfParam1 + ` AS no), cursors AS (
			DELETE FROM message_cursors c USING q WHERE c.queue_no = q.no AND ($2::int IS NULL OR c.group_no = $2))
		DELETE FROM message_ranges g USING q WHERE g.queue_no = q.no AND ($2::int IS NULL OR g.group_no = $2)`
	consumerGroupsDeleteOfQueue = `UPDATE consumer_groups SET lifecycle_state = 'DELETED', version = version + 1, time_updated = now()
		WHERE tenancy_id = $1 AND queue_id = $2 AND lifecycle_state <> 'DELETED'`
	consumerGroupsOfQueue = `SELECT ` + consumerGroupColumns + ` FROM consumer_groups
		WHERE queue_id = $1 AND lifecycle_state <> 'DELETED' ORDER BY group_no`
	// Deleted groups whose messages are still stored (the maintainer removes them in batches).
	consumerGroupsDeletedWithMessages = `SELECT cg.queue_id, cg.group_no FROM consumer_groups cg
		WHERE cg.lifecycle_state = 'DELETED' AND EXISTS (
			SELECT 1 FROM messages m WHERE m.queue_no = (SELECT q.no FROM queues q WHERE q.id = cg.queue_id) AND m.group_no = cg.group_no)`
	consumerGroupPurgeBatch = `DELETE FROM messages m USING (
			SELECT id FROM messages WHERE queue_no = ` + queueNoOfParam1 + ` AND group_no = $2 LIMIT $3) p
		WHERE m.queue_no = ` + queueNoOfParam1 + ` AND m.group_no = $2 AND m.id = p.id`
)

func scanConsumerGroup(row pgx.Row) (ConsumerGroup, error) {
	var g ConsumerGroup
	err := row.Scan(&g.TenancyID, &g.ID, &g.QueueID, &g.GroupNo, &g.DisplayName, &g.Filter, &g.IsEnabled,
		&g.DeadLetterQueueDeliveryCount, &g.LifecycleState, &g.FreeformTags, &g.DefinedTags, &g.Version, &g.TimeCreated, &g.TimeUpdated,
		&g.LoadBalancing)
	g.TimeCreated, g.TimeUpdated = g.TimeCreated.UTC(), g.TimeUpdated.UTC()
	if g.DefinedTags == nil {
		g.DefinedTags = DefinedTags{}
	}
	if g.FreeformTags == nil {
		g.FreeformTags = map[string]string{}
	}
	return g, err
}

// lockQueueForGroups locks an active queue that has the CONSUMER_GROUPS capability.
// It returns the queue's compartment.
func lockQueueForGroups(ctx context.Context, tx pgx.Tx, tenancyID, queueID string) (compartmentID string, _ error) {
	var state string
	var enabled bool
	err := tx.QueryRow(ctx, `SELECT lifecycle_state, consumer_groups_enabled, compartment_id FROM queues
		WHERE tenancy_id = $1 AND id = $2 FOR UPDATE`, tenancyID, queueID).Scan(&state, &enabled, &compartmentID)
	if err == pgx.ErrNoRows {
		return "", fault.NotFound("queueId: queue %s does not exist or you are not authorized to access it", queueID)
	}
	if err != nil {
		return "", err
	}
	if state != StateActive {
		return "", fault.IncorrectState("queue %s is %s", queueID, state)
	}
	if !enabled {
		return "", fault.IncorrectState("queue %s does not have the CONSUMER_GROUPS capability: enable it on the queue first", queueID)
	}
	return compartmentID, nil
}

// GroupInQueue is a consumer group locked for a change, with its queue's lifecycle state (a queue's groups do
// not change while it is being deleted). The queue row is read, not locked: the delete locks the queue first and
// then the groups.
type GroupInQueue struct {
	ConsumerGroup
	QueueState         string
	QueueCompartmentID string
}

// lockGroup reads a live group FOR UPDATE and its queue's state, for changeRow.
func lockGroup(tenancyID, id string) func(context.Context, pgx.Tx) (GroupInQueue, error) {
	return func(ctx context.Context, tx pgx.Tx) (GroupInQueue, error) {
		cur, err := scanConsumerGroup(tx.QueryRow(ctx, consumerGroupGetLocked, tenancyID, id))
		if err != nil {
			return GroupInQueue{}, err
		}
		g := GroupInQueue{ConsumerGroup: cur}
		err = tx.QueryRow(ctx, `SELECT lifecycle_state, compartment_id FROM queues WHERE tenancy_id = $1 AND id = $2`,
			tenancyID, cur.QueueID).Scan(&g.QueueState, &g.QueueCompartmentID)
		return g, err
	}
}

// deleteGroupsOfQueue marks every group of a deleted queue DELETED inside tx, deletes their cursor leases' state,
// and tells the nodes.
func deleteGroupsOfQueue(ctx context.Context, tx pgx.Tx, tenancyID, queueID string) error {
	if _, err := tx.Exec(ctx, consumerGroupsDeleteOfQueue, tenancyID, queueID); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, leaseStateDelete, queueID, nil); err != nil {
		return err
	}
	return Notify(ctx, tx, Notification{Kind: QueueChanged, QueueID: queueID})
}

// Get returns a live group by OCID (the primary group's OCID is its queue's).
func (r *ConsumerGroups) Get(ctx context.Context, tenancyID, id string) (ConsumerGroup, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	g, err := scanConsumerGroup(r.pool.QueryRow(ctx, consumerGroupGet, tenancyID, id))
	return g, interpretError("getting consumer group", err)
}

// Create adds a group to a queue with the capability, and records its work request (done) as completed in the
// same transaction.
func (r *ConsumerGroups) Create(ctx context.Context, g ConsumerGroup, done WorkRequest) (ConsumerGroup, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var out ConsumerGroup
	err := InTx(ctx, r.pool, func(tx pgx.Tx) error {
		compartmentID, err := lockQueueForGroups(ctx, tx, g.TenancyID, g.QueueID)
		if err != nil {
			return err
		}
		if err := r.quotas.checkCount(ctx, tx, g.TenancyID, QuotaConsumerGroupsPerQueue, 1, countGroups, g.QueueID); err != nil {
			return err
		}
		if g.IsPartitioned() {
			var partitions *int32
			if err := tx.QueryRow(ctx, `SELECT partition_count FROM queues WHERE id = $1`, g.QueueID).Scan(&partitions); err != nil {
				return err
			}
			if partitions == nil {
				return fault.InvalidParameter("loadBalancing: PARTITION needs a partitioned queue (created with partitionCount)")
			}
		}
		out, err = scanConsumerGroup(tx.QueryRow(ctx, consumerGroupInsert, g.TenancyID, g.ID, g.QueueID, g.DisplayName, g.Filter,
			g.IsEnabled, g.DeadLetterQueueDeliveryCount, tagsOrEmpty(g.FreeformTags), definedTagsOrEmpty(g.DefinedTags),
			g.LoadBalancing))
		if err != nil {
			return err
		}
		if err := recordCompleted(ctx, tx, done, g.TenancyID, compartmentID, out.ID); err != nil {
			return err
		}
		return Notify(ctx, tx, Notification{Kind: QueueChanged, QueueID: g.QueueID})
	})
	return out, nameConflict("creating consumer group", err, fault.Conflict("displayName: the queue already has a consumer group named %q", g.DisplayName))
}

// List returns one page of a queue's groups.
func (r *ConsumerGroups) List(ctx context.Context, tenancyID string, f ConsumerGroupFilter, p Page) ([]ConsumerGroup, string, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	args := []any{tenancyID, f.QueueID}
	query := `SELECT ` + consumerGroupColumns + ` FROM consumer_groups WHERE tenancy_id = $1 AND queue_id = $2`
	if f.DisplayName != "" {
		args = append(args, f.DisplayName)
		query += ` AND display_name = $` + itoa(len(args))
	}
	if f.ID != "" {
		args = append(args, f.ID)
		query += ` AND id = $` + itoa(len(args))
	}
	query, args = lifecycleFilter(query, args, f.LifecycleState)
	return listPage(ctx, r.pool, "listing consumer groups", p, query, args, "time_created", "display_name", "id", scanConsumerGroup,
		func(g ConsumerGroup) (time.Time, string, string) { return g.TimeCreated, g.DisplayName, g.ID })
}

// Update changes a group that check accepts, and records its work request (done) as completed in the same
// transaction.
func (r *ConsumerGroups) Update(ctx context.Context, tenancyID, id string, check Check[GroupInQueue], p ConsumerGroupPatch,
	done WorkRequest) (ConsumerGroup, error) {
	var out ConsumerGroup
	err := changeRow(ctx, r.pool, lockGroup(tenancyID, id), check, func(ctx context.Context, tx pgx.Tx, cur GroupInQueue) error {
		var defined any
		if p.DefinedTags != nil {
			defined = p.DefinedTags
		}
		var err error
		out, err = scanConsumerGroup(tx.QueryRow(ctx, consumerGroupUpdate, tenancyID, id, p.DisplayName, p.Filter, p.IsEnabled,
			p.SetDLQCount, p.DeadLetterQueueDeliveryCount, tagsPatch(p.FreeformTags), cur.QueueID, defined))
		if err != nil {
			return err
		}
		if err := recordCompleted(ctx, tx, done, tenancyID, cur.QueueCompartmentID, out.ID); err != nil {
			return err
		}
		return Notify(ctx, tx, Notification{Kind: QueueChanged, QueueID: cur.QueueID})
	})
	return out, nameConflict("updating consumer group", err, fault.Conflict("displayName: the queue already has a consumer group with that name"))
}

// Delete marks a group that check accepts DELETED, records its work request (done) as completed in the same
// transaction, and returns the group's queue's id; its stored messages are removed by the maintainer.
func (r *ConsumerGroups) Delete(ctx context.Context, tenancyID, id string, check Check[GroupInQueue], done WorkRequest) (queueID string, err error) {
	err = changeRow(ctx, r.pool, lockGroup(tenancyID, id), check, func(ctx context.Context, tx pgx.Tx, cur GroupInQueue) error {
		queueID = cur.QueueID
		if _, err := tx.Exec(ctx, consumerGroupMarkDeleted, tenancyID, id, cur.QueueID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, leaseStateDelete, cur.QueueID, cur.GroupNo); err != nil {
			return err
		}
		if err := recordCompleted(ctx, tx, done, tenancyID, cur.QueueCompartmentID, cur.ID); err != nil {
			return err
		}
		return Notify(ctx, tx, Notification{Kind: QueueChanged, QueueID: cur.QueueID})
	})
	return queueID, interpretError("deleting consumer group", err)
}

// OfQueue lists a queue's live groups by group_no (the data plane caches it).
func (r *ConsumerGroups) OfQueue(ctx context.Context, queueID string) ([]ConsumerGroup, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, consumerGroupsOfQueue, queueID)
	if err != nil {
		return nil, interpretError("listing consumer groups", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ConsumerGroup, error) { return scanConsumerGroup(row) })
	return list, interpretError("listing consumer groups", err)
}

// upsertPrimary creates or changes the primary group of a queue inside tx.
func upsertPrimary(ctx context.Context, tx pgx.Tx, tenancyID, queueID string, p PrimaryGroup) error {
	if _, err := tx.Exec(ctx, consumerGroupUpsertPrimary, tenancyID, queueID, p.Enabled, p.DisplayName, p.Filter,
		p.DeadLetterQueueDeliveryCount != nil, p.DeadLetterQueueDeliveryCount); err != nil {
		return err
	}
	return Notify(ctx, tx, Notification{Kind: QueueChanged, QueueID: queueID})
}

// GroupRef names one group's messages.
type GroupRef struct {
	QueueID string
	GroupNo int32
}

// DeletedWithMessages lists deleted groups whose messages are still stored.
func (r *ConsumerGroups) DeletedWithMessages(ctx context.Context) ([]GroupRef, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, consumerGroupsDeletedWithMessages)
	if err != nil {
		return nil, interpretError("listing deleted consumer groups", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[GroupRef])
	return out, interpretError("listing deleted consumer groups", err)
}

// PurgeBatch deletes up to batch messages of one group.
func (r *ConsumerGroups) PurgeBatch(ctx context.Context, ref GroupRef, batch int) (int64, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	tag, err := r.pool.Exec(ctx, consumerGroupPurgeBatch, ref.QueueID, ref.GroupNo, batch)
	return tag.RowsAffected(), interpretError("purging consumer group", err)
}
