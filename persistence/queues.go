package persistence

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Queue is a row of queues: the queue's identity and settings.
type Queue struct {
	TenancyID                    string
	ID                           string
	CompartmentID                string
	DisplayName                  string
	LifecycleState               string
	LifecycleDetails             string
	RetentionSeconds             int32
	VisibilitySeconds            int32
	TimeoutSeconds               int32
	DeadLetterQueueDeliveryCount int32
	ChannelConsumptionLimit      int32
	MaxSizeBytes                 int64
	DedupWindowSeconds           int32
	ConsumerGroupsEnabled        bool  // the CONSUMER_GROUPS capability
	PrimaryGroupEnabled          *bool // with the capability: whether the primary consumer group is enabled
	SingleActiveConsumer         bool  // per consumer group, only the active consumer receives messages
	ConsumerLeaseSeconds         int32 // how long a single active consumer stays active without calling
	FreeformTags                 map[string]string
	Version                      int64
	TimeCreated                  time.Time
	TimeUpdated                  time.Time
}

// Etag of the queue's current version.
func (q Queue) Etag() string { return Etag(q.ID, q.Version) }

// QueuePatch holds the fields an update changes (nil = unchanged).
type QueuePatch struct {
	DisplayName                  *string
	VisibilitySeconds            *int32
	TimeoutSeconds               *int32
	DeadLetterQueueDeliveryCount *int32
	ChannelConsumptionLimit      *int32
	MaxSizeBytes                 *int64
	DedupWindowSeconds           *int32
	SingleActiveConsumer         *bool
	ConsumerLeaseSeconds         *int32
	FreeformTags                 map[string]string
	// ConsumerGroups, when set, enables (true) or disables (false) the CONSUMER_GROUPS capability, and
	// PrimaryGroupEnabled enables or disables the primary group.
	ConsumerGroups      *bool
	PrimaryGroupEnabled bool
}

// QueueFilter selects queues for a list.
type QueueFilter struct {
	CompartmentID  string
	InSubtree      bool
	DisplayName    string
	ID             string
	LifecycleState string // "" = every state but DELETED
}

// Queues is the repository of the queues table.
type Queues struct{ pool *pgxpool.Pool }

const queueColumns = `tenancy_id, id, compartment_id, display_name, lifecycle_state, lifecycle_details, retention_seconds,
	visibility_seconds, timeout_seconds, dead_letter_queue_delivery_count, channel_consumption_limit, max_size_bytes,
	dedup_window_seconds, consumer_groups_enabled,
	(SELECT cg.is_enabled FROM consumer_groups cg WHERE cg.queue_id = queues.id AND cg.group_no = 0) AS primary_enabled,
	is_single_active_consumer, consumer_lease_seconds, freeform_tags, version, time_created, time_updated`

const (
	queueGet       = `SELECT ` + queueColumns + ` FROM queues WHERE tenancy_id = $1 AND id = $2`
	queueGetLocked = queueGet + ` FOR UPDATE`
	queueInsert    = `INSERT INTO queues (tenancy_id, id, compartment_id, display_name, retention_seconds, visibility_seconds,
		timeout_seconds, dead_letter_queue_delivery_count, channel_consumption_limit, max_size_bytes, dedup_window_seconds, freeform_tags,
		is_single_active_consumer, consumer_lease_seconds)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING ` + queueColumns
	queueUpdate = `UPDATE queues SET display_name = coalesce($3, display_name),
		visibility_seconds = coalesce($4, visibility_seconds), timeout_seconds = coalesce($5, timeout_seconds),
		dead_letter_queue_delivery_count = coalesce($6, dead_letter_queue_delivery_count),
		channel_consumption_limit = coalesce($7, channel_consumption_limit), max_size_bytes = coalesce($8, max_size_bytes),
		dedup_window_seconds = coalesce($9, dedup_window_seconds), freeform_tags = coalesce($10, freeform_tags),
		is_single_active_consumer = coalesce($11, is_single_active_consumer),
		consumer_lease_seconds = coalesce($12, consumer_lease_seconds),
		version = version + 1, time_updated = now()
		WHERE tenancy_id = $1 AND id = $2 RETURNING ` + queueColumns
	queueSetState = `UPDATE queues SET lifecycle_state = $3, lifecycle_details = $4, version = version + 1, time_updated = now()
		WHERE tenancy_id = $1 AND id = $2`
	queueMove = `UPDATE queues SET compartment_id = $3, version = version + 1, time_updated = now()
		WHERE tenancy_id = $1 AND id = $2 RETURNING ` + queueColumns
)

func scanQueue(row pgx.Row) (Queue, error) {
	var q Queue
	err := row.Scan(&q.TenancyID, &q.ID, &q.CompartmentID, &q.DisplayName, &q.LifecycleState, &q.LifecycleDetails,
		&q.RetentionSeconds, &q.VisibilitySeconds, &q.TimeoutSeconds, &q.DeadLetterQueueDeliveryCount,
		&q.ChannelConsumptionLimit, &q.MaxSizeBytes, &q.DedupWindowSeconds, &q.ConsumerGroupsEnabled, &q.PrimaryGroupEnabled,
		&q.SingleActiveConsumer, &q.ConsumerLeaseSeconds, &q.FreeformTags, &q.Version,
		&q.TimeCreated, &q.TimeUpdated)
	q.TimeCreated, q.TimeUpdated = q.TimeCreated.UTC(), q.TimeUpdated.UTC()
	if q.FreeformTags == nil {
		q.FreeformTags = map[string]string{}
	}
	return q, err
}

// Get returns one queue of the tenancy (in any lifecycle state).
func (r *Queues) Get(ctx context.Context, tenancyID, id string) (Queue, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	q, err := scanQueue(r.pool.QueryRow(ctx, queueGet, tenancyID, id))
	return q, interpretError("getting queue", err)
}

// Create inserts a queue into an active compartment.
func (r *Queues) Create(ctx context.Context, q Queue) (Queue, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var out Queue
	err := InTx(ctx, r.pool, func(tx pgx.Tx) error {
		if err := LockActiveCompartment(ctx, tx, q.TenancyID, q.CompartmentID); err != nil {
			return err
		}
		var err error
		out, err = scanQueue(tx.QueryRow(ctx, queueInsert, q.TenancyID, q.ID, q.CompartmentID, q.DisplayName,
			q.RetentionSeconds, q.VisibilitySeconds, q.TimeoutSeconds, q.DeadLetterQueueDeliveryCount,
			q.ChannelConsumptionLimit, q.MaxSizeBytes, q.DedupWindowSeconds, tagsOrEmpty(q.FreeformTags),
			q.SingleActiveConsumer, q.ConsumerLeaseSeconds))
		if err != nil || !q.ConsumerGroupsEnabled {
			return err
		}
		if err := setConsumerGroups(ctx, tx, q.TenancyID, q.ID, true, q.PrimaryGroupEnabled == nil || *q.PrimaryGroupEnabled); err != nil {
			return err
		}
		out, err = scanQueue(tx.QueryRow(ctx, queueGet, q.TenancyID, q.ID))
		return err
	})
	return out, interpretError("creating queue", err)
}

// List returns one page of queues and the next page token.
func (r *Queues) List(ctx context.Context, tenancyID string, f QueueFilter, p Page) ([]Queue, string, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	args := []any{tenancyID, f.CompartmentID}
	query := `SELECT ` + queueColumns + ` FROM queues WHERE tenancy_id = $1 AND compartment_id = $2`
	if f.InSubtree {
		query = compartmentSubtreeCTE + `SELECT ` + queueColumns + ` FROM queues WHERE tenancy_id = $1
			AND compartment_id IN (SELECT id FROM subtree)`
	}
	if f.DisplayName != "" {
		args = append(args, f.DisplayName)
		query += ` AND display_name = $` + itoa(len(args))
	}
	if f.ID != "" {
		args = append(args, f.ID)
		query += ` AND id = $` + itoa(len(args))
	}
	query, args = lifecycleFilter(query, args, f.LifecycleState)
	return listPage(ctx, r.pool, "listing queues", p, query, args, "time_created", "display_name", "id", scanQueue,
		func(q Queue) (time.Time, string, string) { return q.TimeCreated, q.DisplayName, q.ID })
}

// lockQueue reads a queue FOR UPDATE, for changeRow.
func lockQueue(tenancyID, id string) func(context.Context, pgx.Tx) (Queue, error) {
	return lockedRow(scanQueue, queueGetLocked, tenancyID, id)
}

// Update changes the settings of a queue that check accepts.
func (r *Queues) Update(ctx context.Context, tenancyID, id string, check Check[Queue], p QueuePatch) (Queue, error) {
	var out Queue
	err := changeRow(ctx, r.pool, lockQueue(tenancyID, id), check, func(ctx context.Context, tx pgx.Tx, _ Queue) error {
		if p.ConsumerGroups != nil {
			if err := setConsumerGroups(ctx, tx, tenancyID, id, *p.ConsumerGroups, p.PrimaryGroupEnabled); err != nil {
				return err
			}
		}
		var err error
		out, err = scanQueue(tx.QueryRow(ctx, queueUpdate, tenancyID, id, p.DisplayName, p.VisibilitySeconds,
			p.TimeoutSeconds, p.DeadLetterQueueDeliveryCount, p.ChannelConsumptionLimit, p.MaxSizeBytes,
			p.DedupWindowSeconds, tagsPatch(p.FreeformTags), p.SingleActiveConsumer, p.ConsumerLeaseSeconds))
		return err
	})
	return out, interpretError("updating queue", err)
}

// ChangeCompartment moves a queue that check accepts into another active compartment of the same tenancy.
func (r *Queues) ChangeCompartment(ctx context.Context, tenancyID, id string, check Check[Queue], compartmentID string) (Queue, error) {
	var out Queue
	err := changeRow(ctx, r.pool, lockQueue(tenancyID, id), check, func(ctx context.Context, tx pgx.Tx, _ Queue) error {
		if err := LockActiveCompartment(ctx, tx, tenancyID, compartmentID); err != nil {
			return err
		}
		var err error
		if out, err = scanQueue(tx.QueryRow(ctx, queueMove, tenancyID, id, compartmentID)); err != nil {
			return err
		}
		return Notify(ctx, tx, Notification{Kind: TenancyChanged, TenancyID: tenancyID}) // decisions cache a queue's compartment
	})
	return out, interpretError("moving queue", err)
}

// StartWork locks a queue that check accepts, optionally moves it to newState (DELETING for a delete), and
// records the work request in the same transaction, so that the change and its work request commit together.
func (r *Queues) StartWork(ctx context.Context, tenancyID, id string, check Check[Queue], newState string, wr WorkRequest) (WorkRequest, error) {
	var out WorkRequest
	err := changeRow(ctx, r.pool, lockQueue(tenancyID, id), check, func(ctx context.Context, tx pgx.Tx, q Queue) error {
		if newState != "" {
			if _, err := tx.Exec(ctx, queueSetState, tenancyID, id, newState, ""); err != nil {
				return err
			}
		}
		wr.TenancyID, wr.CompartmentID, wr.ResourceID, wr.ResourceType = tenancyID, q.CompartmentID, id, "queue"
		if wr.OperationType == OpPurgeQueue {
			// A purge removes what was published before it was accepted, not what arrives while it waits to run,
			// of the consumer groups it names as they are now (purge.go).
			if wr.Params == nil {
				wr.Params = map[string]any{}
			}
			if err := preparePurge(ctx, tx, q, wr.Params); err != nil {
				return err
			}
		}
		var err error
		out, err = insertWorkRequest(ctx, tx, wr)
		return err
	})
	return out, interpretError("starting queue work request", err)
}

// SetState changes a queue's lifecycle state (the work request executor finishing a delete). A DELETED queue's
// consumer groups are DELETED with it, in the same transaction.
func (r *Queues) SetState(ctx context.Context, tenancyID, id, state, details string) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	if state != StateDeleted {
		_, err := r.pool.Exec(ctx, queueSetState, tenancyID, id, state, details)
		return interpretError("setting queue state", err)
	}
	err := InTx(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, queueSetState, tenancyID, id, state, details); err != nil {
			return err
		}
		return deleteGroupsOfQueue(ctx, tx, tenancyID, id)
	})
	return interpretError("setting queue state", err)
}

func itoa(n int) string { return strconv.Itoa(n) }

// RetentionRef is a queue's id and retention, for the retention maintainer.
type RetentionRef struct {
	ID               string
	RetentionSeconds int32
}

// AllWithRetention lists every queue that can hold messages (any tenancy: maintenance only), after afterID.
func (r *Queues) AllWithRetention(ctx context.Context, afterID string, limit int) ([]RetentionRef, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, `SELECT id, retention_seconds FROM queues WHERE lifecycle_state <> 'DELETED' AND id > $1
		ORDER BY id LIMIT $2`, afterID, limit)
	if err != nil {
		return nil, interpretError("listing queues", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[RetentionRef])
	return out, interpretError("listing queues", err)
}

// setConsumerGroups turns the CONSUMER_GROUPS capability on or off inside tx; turning it on creates (or updates)
// the primary group.
func setConsumerGroups(ctx context.Context, tx pgx.Tx, tenancyID, queueID string, enabled, primaryEnabled bool) error {
	if _, err := tx.Exec(ctx, `UPDATE queues SET consumer_groups_enabled = $3 WHERE tenancy_id = $1 AND id = $2`,
		tenancyID, queueID, enabled); err != nil {
		return err
	}
	if !enabled {
		return Notify(ctx, tx, Notification{Kind: QueueChanged, QueueID: queueID})
	}
	return upsertPrimary(ctx, tx, tenancyID, queueID, primaryEnabled)
}
