package persistence

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/fault"
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
	ConsumerGroupsEnabled        bool          // the CONSUMER_GROUPS capability
	Primary                      *PrimaryGroup // the primary consumer group, once the capability was enabled
	LargeMessages                bool          // the LARGE_MESSAGES capability: contents up to 1 MiB
	SingleActiveConsumer         bool          // per consumer group, only the active consumer receives messages
	ConsumerLeaseSeconds         int32         // how long a single active consumer stays active without calling
	PartitionCount               int32         // partitions of a partitioned queue (0 = not partitioned); immutable
	CustomEncryptionKeyID        *string       // kept and returned; at rest messages are PostgreSQL's to protect
	FreeformTags                 map[string]string
	DefinedTags                  DefinedTags
	Version                      int64
	TimeCreated                  time.Time
	TimeUpdated                  time.Time
}

// Etag of the queue's current version.
func (q Queue) Etag() string { return Etag(q.ID, q.Version) }

// PrimaryGroup is what the CONSUMER_GROUPS capability says of a queue's primary consumer group (the group whose
// OCID is the queue's). In a patch, an empty DisplayName and nil Filter and DeadLetterQueueDeliveryCount keep
// what the group has.
type PrimaryGroup struct {
	Enabled                      bool    `json:"enabled"`
	DisplayName                  string  `json:"displayName"`
	Filter                       *string `json:"filter"`
	DeadLetterQueueDeliveryCount *int32  `json:"deadLetterQueueDeliveryCount"` // nil = the queue's
}

// DefinedTags are OCI's defined tags ({"namespace": {"key": value}}), kept and returned as given.
type DefinedTags map[string]map[string]any

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
	CustomEncryptionKeyID        *string
	FreeformTags                 map[string]string
	DefinedTags                  DefinedTags
	// ConsumerGroups, when set, enables (true) or disables (false) the CONSUMER_GROUPS capability; Primary then
	// sets the primary group.
	ConsumerGroups *bool
	Primary        PrimaryGroup
	// LargeMessages, when set, enables or disables the LARGE_MESSAGES capability.
	LargeMessages *bool
}

// QueueFilter selects queues for a list.
type QueueFilter struct {
	CompartmentID  string // "" = every compartment of the tenancy (a list by ID)
	InSubtree      bool
	DisplayName    string
	ID             string
	LifecycleState string // "" = every state but DELETED
}

// Queues is the repository of the queues table.
type Queues struct {
	pool   *pgxpool.Pool
	quotas *Quotas // the count quota checked by Create
}

const queueColumns = `tenancy_id, id, compartment_id, display_name, lifecycle_state, lifecycle_details, retention_seconds,
	visibility_seconds, timeout_seconds, dead_letter_queue_delivery_count, channel_consumption_limit, max_size_bytes,
	dedup_window_seconds, consumer_groups_enabled,
	(SELECT json_build_object('enabled', cg.is_enabled, 'displayName', cg.display_name, 'filter', cg.filter,
		'deadLetterQueueDeliveryCount', cg.dead_letter_queue_delivery_count)
		FROM consumer_groups cg WHERE cg.queue_id = queues.id AND cg.group_no = 0) AS primary_group,
	large_messages, is_single_active_consumer, consumer_lease_seconds, custom_encryption_key_id, freeform_tags,
	defined_tags, version, time_created, time_updated, coalesce(partition_count, 0)`

const (
	queueGet       = `SELECT ` + queueColumns + ` FROM queues WHERE tenancy_id = $1 AND id = $2`
	queueGetLocked = queueGet + ` FOR UPDATE`
	queueInsert    = `INSERT INTO queues (tenancy_id, id, compartment_id, display_name, retention_seconds, visibility_seconds,
		timeout_seconds, dead_letter_queue_delivery_count, channel_consumption_limit, max_size_bytes, dedup_window_seconds, freeform_tags,
		is_single_active_consumer, consumer_lease_seconds, large_messages, custom_encryption_key_id, defined_tags, partition_count)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, nullif($18, 0)) RETURNING ` + queueColumns
	queueUpdate = `UPDATE queues SET display_name = coalesce($3, display_name),
		visibility_seconds = coalesce($4, visibility_seconds), timeout_seconds = coalesce($5, timeout_seconds),
		dead_letter_queue_delivery_count = coalesce($6, dead_letter_queue_delivery_count),
		channel_consumption_limit = coalesce($7, channel_consumption_limit), max_size_bytes = coalesce($8, max_size_bytes),
		dedup_window_seconds = coalesce($9, dedup_window_seconds), freeform_tags = coalesce($10, freeform_tags),
		is_single_active_consumer = coalesce($11, is_single_active_consumer),
		consumer_lease_seconds = coalesce($12, consumer_lease_seconds),
		large_messages = coalesce($13, large_messages), custom_encryption_key_id = coalesce($14, custom_encryption_key_id),
		defined_tags = coalesce($15, defined_tags),
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
		&q.ChannelConsumptionLimit, &q.MaxSizeBytes, &q.DedupWindowSeconds, &q.ConsumerGroupsEnabled, &q.Primary,
		&q.LargeMessages, &q.SingleActiveConsumer, &q.ConsumerLeaseSeconds, &q.CustomEncryptionKeyID, &q.FreeformTags,
		&q.DefinedTags, &q.Version, &q.TimeCreated, &q.TimeUpdated, &q.PartitionCount)
	q.TimeCreated, q.TimeUpdated = q.TimeCreated.UTC(), q.TimeUpdated.UTC()
	if q.FreeformTags == nil {
		q.FreeformTags = map[string]string{}
	}
	if q.DefinedTags == nil {
		q.DefinedTags = DefinedTags{}
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

// Create inserts a queue into an active compartment, and records its work request (done) as completed in the same
// transaction.
func (r *Queues) Create(ctx context.Context, q Queue, done WorkRequest) (Queue, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var out Queue
	err := InTx(ctx, r.pool, func(tx pgx.Tx) error {
		if err := LockActiveCompartment(ctx, tx, q.TenancyID, q.CompartmentID); err != nil {
			return err
		}
		if err := r.quotas.checkCount(ctx, tx, q.TenancyID, QuotaQueues, 1, countQueues); err != nil {
			return err
		}
		var err error
		out, err = scanQueue(tx.QueryRow(ctx, queueInsert, q.TenancyID, q.ID, q.CompartmentID, q.DisplayName,
			q.RetentionSeconds, q.VisibilitySeconds, q.TimeoutSeconds, q.DeadLetterQueueDeliveryCount,
			q.ChannelConsumptionLimit, q.MaxSizeBytes, q.DedupWindowSeconds, tagsOrEmpty(q.FreeformTags),
			q.SingleActiveConsumer, q.ConsumerLeaseSeconds, q.LargeMessages, q.CustomEncryptionKeyID, definedTagsOrEmpty(q.DefinedTags),
			q.PartitionCount))
		if err != nil {
			return err
		}
		if q.ConsumerGroupsEnabled {
			primary := PrimaryGroup{Enabled: true}
			if q.Primary != nil {
				primary = *q.Primary
			}
			if err := setConsumerGroups(ctx, tx, q.TenancyID, q.ID, true, primary); err != nil {
				return err
			}
			if out, err = scanQueue(tx.QueryRow(ctx, queueGet, q.TenancyID, q.ID)); err != nil {
				return err
			}
		}
		return recordCompleted(ctx, tx, done, q.TenancyID, out.CompartmentID, out.ID)
	})
	return out, nameConflict("creating queue", err, fault.Conflict("primaryConsumerGroupDisplayName: the name is taken"))
}

// List returns one page of queues and the next page token.
func (r *Queues) List(ctx context.Context, tenancyID string, f QueueFilter, p Page) ([]Queue, string, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	args := []any{tenancyID, f.CompartmentID}
	query := `SELECT ` + queueColumns + ` FROM queues WHERE tenancy_id = $1 AND compartment_id = $2`
	if f.CompartmentID == "" { // a list by id across the tenancy
		args, query = []any{tenancyID}, `SELECT `+queueColumns+` FROM queues WHERE tenancy_id = $1`
	} else if f.InSubtree {
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

// Update changes the settings of a queue that check accepts, and records its work request (done) as completed in
// the same transaction.
func (r *Queues) Update(ctx context.Context, tenancyID, id string, check Check[Queue], p QueuePatch, done WorkRequest) (Queue, error) {
	var out Queue
	err := changeRow(ctx, r.pool, lockQueue(tenancyID, id), check, func(ctx context.Context, tx pgx.Tx, _ Queue) error {
		if p.ConsumerGroups != nil {
			if err := setConsumerGroups(ctx, tx, tenancyID, id, *p.ConsumerGroups, p.Primary); err != nil {
				return err
			}
		}
		var defined any
		if p.DefinedTags != nil {
			defined = p.DefinedTags
		}
		var err error
		out, err = scanQueue(tx.QueryRow(ctx, queueUpdate, tenancyID, id, p.DisplayName, p.VisibilitySeconds,
			p.TimeoutSeconds, p.DeadLetterQueueDeliveryCount, p.ChannelConsumptionLimit, p.MaxSizeBytes,
			p.DedupWindowSeconds, tagsPatch(p.FreeformTags), p.SingleActiveConsumer, p.ConsumerLeaseSeconds,
			p.LargeMessages, p.CustomEncryptionKeyID, defined))
		if err != nil {
			return err
		}
		return recordCompleted(ctx, tx, done, tenancyID, out.CompartmentID, out.ID)
	})
	return out, nameConflict("updating queue", err, fault.Conflict("primaryConsumerGroupDisplayName: the queue already has a consumer group with that name"))
}

// ChangeCompartment moves a queue that check accepts into another active compartment of the same tenancy, and
// records its work request (done) as completed in the same transaction.
func (r *Queues) ChangeCompartment(ctx context.Context, tenancyID, id string, check Check[Queue], compartmentID string, done WorkRequest) (Queue, error) {
	var out Queue
	err := changeRow(ctx, r.pool, lockQueue(tenancyID, id), check, func(ctx context.Context, tx pgx.Tx, _ Queue) error {
		if err := LockActiveCompartment(ctx, tx, tenancyID, compartmentID); err != nil {
			return err
		}
		var err error
		if out, err = scanQueue(tx.QueryRow(ctx, queueMove, tenancyID, id, compartmentID)); err != nil {
			return err
		}
		if err := recordCompleted(ctx, tx, done, tenancyID, out.CompartmentID, out.ID); err != nil {
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

// definedTagsOrEmpty stores absent defined tags as {}.
func definedTagsOrEmpty(t DefinedTags) DefinedTags {
	if t == nil {
		return DefinedTags{}
	}
	return t
}

// RetentionRef is a queue's id and retention, for the retention maintainer (and its tenancy, for the metrics of
// what retention deleted).
type RetentionRef struct {
	ID               string
	RetentionSeconds int32
	TenancyID        string
}

// AllWithRetention lists every queue that can hold messages (any tenancy: maintenance only), after afterID.
func (r *Queues) AllWithRetention(ctx context.Context, afterID string, limit int) ([]RetentionRef, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, `SELECT id, retention_seconds, tenancy_id FROM queues WHERE lifecycle_state <> 'DELETED' AND id > $1
		ORDER BY id LIMIT $2`, afterID, limit)
	if err != nil {
		return nil, interpretError("listing queues", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[RetentionRef])
	return out, interpretError("listing queues", err)
}

// setConsumerGroups turns the CONSUMER_GROUPS capability on or off inside tx; turning it on creates (or updates)
// the primary group.
func setConsumerGroups(ctx context.Context, tx pgx.Tx, tenancyID, queueID string, enabled bool, primary PrimaryGroup) error {
	if _, err := tx.Exec(ctx, `UPDATE queues SET consumer_groups_enabled = $3 WHERE tenancy_id = $1 AND id = $2`,
		tenancyID, queueID, enabled); err != nil {
		return err
	}
	if !enabled {
		return Notify(ctx, tx, Notification{Kind: QueueChanged, QueueID: queueID})
	}
	return upsertPrimary(ctx, tx, tenancyID, queueID, primary)
}
