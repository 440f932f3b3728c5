package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/fault"
)

// Lifecycle states (DESIGN section 3).
const (
	StateActive   = "ACTIVE"
	StateDeleting = "DELETING"
	StateDeleted  = "DELETED"
	StateFailed   = "FAILED"
)

// Compartment is a row of compartments.
type Compartment struct {
	TenancyID      string
	ID             string
	ParentID       *string // nil for the root compartment
	Name           string
	Description    string
	LifecycleState string
	FreeformTags   map[string]string
	Version        int64
	TimeCreated    time.Time
	TimeUpdated    time.Time
}

// Etag of the compartment's current version.
func (c Compartment) Etag() string { return Etag(c.ID, c.Version) }

// CompartmentPatch holds the fields an update changes (nil = unchanged).
type CompartmentPatch struct {
	Name         *string
	Description  *string
	FreeformTags map[string]string
}

// CompartmentFilter selects compartments for a list.
type CompartmentFilter struct {
	ParentID       string
	InSubtree      bool // every descendant of ParentID, not only its children
	Name           string
	LifecycleState string // "" = every state but DELETED
}

// Compartments is the repository of the compartments table.
type Compartments struct {
	pool   *pgxpool.Pool
	quotas *Quotas // the count quota checked by Create
}

const compartmentColumns = `tenancy_id, id, parent_id, name, description, lifecycle_state, freeform_tags, version, time_created, time_updated`

const (
	compartmentGet       = `SELECT ` + compartmentColumns + ` FROM compartments WHERE tenancy_id = $1 AND id = $2`
	compartmentGetLocked = compartmentGet + ` FOR UPDATE`
	compartmentInsert    = `INSERT INTO compartments (tenancy_id, id, parent_id, name, description, freeform_tags)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING ` + compartmentColumns
	compartmentUpdate = `UPDATE compartments SET name = coalesce($3, name), description = coalesce($4, description),
		freeform_tags = coalesce($5, freeform_tags), version = version + 1, time_updated = now()
		WHERE tenancy_id = $1 AND id = $2 RETURNING ` + compartmentColumns
	compartmentMarkDeleted = `UPDATE compartments SET lifecycle_state = 'DELETED', version = version + 1, time_updated = now()
		WHERE tenancy_id = $1 AND id = $2`
	// A compartment is empty when no live child compartment and no live queue is in it.
	compartmentHasResources = `SELECT EXISTS (SELECT 1 FROM compartments WHERE tenancy_id = $1 AND parent_id = $2 AND lifecycle_state <> 'DELETED')
		OR EXISTS (SELECT 1 FROM queues WHERE tenancy_id = $1 AND compartment_id = $2 AND lifecycle_state <> 'DELETED')
		OR EXISTS (SELECT 1 FROM policies WHERE tenancy_id = $1 AND compartment_id = $2 AND lifecycle_state <> 'DELETED')`
	// The subtree under a compartment (the compartment itself included), by a recursive walk down parent_id.
	compartmentSubtreeCTE = `WITH RECURSIVE subtree AS (
			SELECT id FROM compartments WHERE tenancy_id = $1 AND id = $2
			UNION ALL
			SELECT c.id FROM compartments c JOIN subtree s ON c.parent_id = s.id WHERE c.tenancy_id = $1
		) `
	// The path from the root down to a compartment.
	compartmentAncestry = `WITH RECURSIVE up AS (
			SELECT id, parent_id, name, 0 AS depth FROM compartments WHERE tenancy_id = $1 AND id = $2
			UNION ALL
			SELECT c.id, c.parent_id, c.name, up.depth + 1 FROM compartments c JOIN up ON c.id = up.parent_id WHERE c.tenancy_id = $1
		) SELECT id, name FROM up ORDER BY depth DESC`
)

func scanCompartment(row pgx.Row) (Compartment, error) {
	var c Compartment
	err := row.Scan(&c.TenancyID, &c.ID, &c.ParentID, &c.Name, &c.Description, &c.LifecycleState, &c.FreeformTags,
		&c.Version, &c.TimeCreated, &c.TimeUpdated)
	c.TimeCreated, c.TimeUpdated = c.TimeCreated.UTC(), c.TimeUpdated.UTC()
	if c.FreeformTags == nil {
		c.FreeformTags = map[string]string{}
	}
	return c, err
}

// Get returns one compartment of the tenancy.
func (r *Compartments) Get(ctx context.Context, tenancyID, id string) (Compartment, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	c, err := scanCompartment(r.pool.QueryRow(ctx, compartmentGet, tenancyID, id))
	return c, interpretError("getting compartment", err)
}

// Create inserts a compartment under an active parent.
func (r *Compartments) Create(ctx context.Context, c Compartment) (Compartment, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var out Compartment
	err := InTx(ctx, r.pool, func(tx pgx.Tx) error {
		if err := LockActiveCompartment(ctx, tx, c.TenancyID, *c.ParentID); err != nil {
			return err
		}
		if err := r.quotas.checkCount(ctx, tx, c.TenancyID, QuotaCompartments, 1, countCompartments); err != nil {
			return err
		}
		var err error
		if out, err = scanCompartment(tx.QueryRow(ctx, compartmentInsert, c.TenancyID, c.ID, c.ParentID, c.Name, c.Description, tagsOrEmpty(c.FreeformTags))); err != nil {
			return err
		}
		return Notify(ctx, tx, Notification{Kind: TenancyChanged, TenancyID: c.TenancyID}) // policies name compartments: every node reloads the tree
	})
	return out, nameConflict("creating compartment", err, fault.Conflict("name: a compartment named %q already exists in the parent compartment", c.Name))
}

// LockActiveCompartment takes a share lock on a compartment that must be ACTIVE, so that it cannot be deleted
// while a resource is created in it. Call it inside the creating transaction.
func LockActiveCompartment(ctx context.Context, tx pgx.Tx, tenancyID, id string) error {
	var state string
	err := tx.QueryRow(ctx, `SELECT lifecycle_state FROM compartments WHERE tenancy_id = $1 AND id = $2 FOR SHARE`, tenancyID, id).Scan(&state)
	if err == pgx.ErrNoRows {
		return fault.NotFound("compartmentId: compartment %s does not exist or you are not authorized to access it", id)
	}
	if err != nil {
		return err
	}
	if state != StateActive {
		return fault.IncorrectState("compartmentId: compartment %s is %s", id, state)
	}
	return nil
}

// List returns one page of compartments and the next page token.
func (r *Compartments) List(ctx context.Context, tenancyID string, f CompartmentFilter, p Page) ([]Compartment, string, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	args := []any{tenancyID, f.ParentID}
	query := `SELECT ` + compartmentColumns + ` FROM compartments WHERE tenancy_id = $1 AND parent_id = $2`
	if f.InSubtree {
		query = compartmentSubtreeCTE + `SELECT ` + compartmentColumns + ` FROM compartments WHERE tenancy_id = $1
			AND id IN (SELECT id FROM subtree) AND id <> $2`
	}
	if f.Name != "" {
		args = append(args, f.Name)
		query += ` AND name = $3`
	}
	query, args = lifecycleFilter(query, args, f.LifecycleState)
	return listPage(ctx, r.pool, "listing compartments", p, query, args, "time_created", "name", "id", scanCompartment,
		func(c Compartment) (time.Time, string, string) { return c.TimeCreated, c.Name, c.ID })
}

// Update changes a compartment that check accepts.
func (r *Compartments) Update(ctx context.Context, tenancyID, id string, check Check[Compartment], patch CompartmentPatch) (Compartment, error) {
	var out Compartment
	err := changeRow(ctx, r.pool, lockedRow(scanCompartment, compartmentGetLocked, tenancyID, id), check,
		func(ctx context.Context, tx pgx.Tx, _ Compartment) error {
			var err error
			tags := tagsPatch(patch.FreeformTags)
			if out, err = scanCompartment(tx.QueryRow(ctx, compartmentUpdate, tenancyID, id, patch.Name, patch.Description, tags)); err != nil {
				return err
			}
			return Notify(ctx, tx, Notification{Kind: TenancyChanged, TenancyID: tenancyID})
		})
	return out, nameConflict("updating compartment", err, fault.Conflict("name: a compartment with that name already exists in the parent compartment"))
}

// Delete marks a compartment that check accepts DELETED, provided it is empty.
func (r *Compartments) Delete(ctx context.Context, tenancyID, id string, check Check[Compartment]) error {
	err := changeRow(ctx, r.pool, lockedRow(scanCompartment, compartmentGetLocked, tenancyID, id), check,
		func(ctx context.Context, tx pgx.Tx, _ Compartment) error {
			var busy bool
			if err := tx.QueryRow(ctx, compartmentHasResources, tenancyID, id).Scan(&busy); err != nil {
				return err
			}
			if busy {
				return fault.IncorrectState("compartment %s is not empty: delete its compartments, queues and policies first", id)
			}
			if _, err := tx.Exec(ctx, compartmentMarkDeleted, tenancyID, id); err != nil {
				return err
			}
			return Notify(ctx, tx, Notification{Kind: TenancyChanged, TenancyID: tenancyID})
		})
	return interpretError("deleting compartment", err)
}

// AncestorRef is one compartment on the path from the root.
type AncestorRef struct {
	ID   string
	Name string
}

// Ancestry returns the path from the tenancy's root down to the compartment (inclusive).
func (r *Compartments) Ancestry(ctx context.Context, tenancyID, id string) ([]AncestorRef, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, compartmentAncestry, tenancyID, id)
	if err != nil {
		return nil, interpretError("compartment ancestry", err)
	}
	refs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[AncestorRef])
	return refs, interpretError("compartment ancestry", err)
}

// tagsPatch is an update's freeform_tags parameter: NULL (keep the stored tags) when the request has none.
func tagsPatch(tags map[string]string) any {
	if tags == nil {
		return nil
	}
	return tags
}

// nameConflict turns a unique violation of a write into conflict, whose message names the clashing field; other
// errors go through interpretError.
func nameConflict(op string, err error, conflict *fault.Error) error {
	if isUniqueViolation(err) {
		return conflict
	}
	return interpretError(op, err)
}

func tagsOrEmpty(tags map[string]string) map[string]string {
	if tags == nil {
		return map[string]string{}
	}
	return tags
}
