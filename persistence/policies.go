package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/fault"
)

// Policy is a row of policies.
type Policy struct {
	TenancyID      string
	ID             string
	CompartmentID  string
	Name           string
	Description    string
	Statements     []string
	LifecycleState string
	FreeformTags   map[string]string
	Version        int64
	TimeCreated    time.Time
	TimeUpdated    time.Time
}

// Etag of the policy's current version.
func (p Policy) Etag() string { return Etag(p.ID, p.Version) }

// PolicyPatch holds the fields an update changes (nil = unchanged).
type PolicyPatch struct {
	Name         *string
	Description  *string
	Statements   []string
	FreeformTags map[string]string
}

// Policies is the repository of the policies table.
type Policies struct {
	pool   *pgxpool.Pool
	quotas *Quotas // the count quota checked by Create
}

const policyColumns = `tenancy_id, id, compartment_id, name, description, statements, lifecycle_state, freeform_tags, version,
	time_created, time_updated`

const (
	policyGet       = `SELECT ` + policyColumns + ` FROM policies WHERE tenancy_id = $1 AND id = $2`
	policyGetLocked = policyGet + ` FOR UPDATE`
	policyInsert    = `INSERT INTO policies (tenancy_id, id, compartment_id, name, description, statements, freeform_tags)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ` + policyColumns
	policyUpdate = `UPDATE policies SET name = coalesce($3, name), description = coalesce($4, description),
		statements = coalesce($5, statements), freeform_tags = coalesce($6, freeform_tags), version = version + 1, time_updated = now()
		WHERE tenancy_id = $1 AND id = $2 RETURNING ` + policyColumns
	policyMarkDeleted = `UPDATE policies SET lifecycle_state = 'DELETED', version = version + 1, time_updated = now()
		WHERE tenancy_id = $1 AND id = $2`
	policiesOfTenancy = `SELECT ` + policyColumns + ` FROM policies WHERE tenancy_id = $1 AND lifecycle_state = 'ACTIVE'
		ORDER BY time_created, id`
)

func scanPolicy(row pgx.Row) (Policy, error) {
	var p Policy
	err := row.Scan(&p.TenancyID, &p.ID, &p.CompartmentID, &p.Name, &p.Description, &p.Statements, &p.LifecycleState,
		&p.FreeformTags, &p.Version, &p.TimeCreated, &p.TimeUpdated)
	p.TimeCreated, p.TimeUpdated = p.TimeCreated.UTC(), p.TimeUpdated.UTC()
	if p.FreeformTags == nil {
		p.FreeformTags = map[string]string{}
	}
	return p, err
}

// insertPolicy inserts a policy inside tx (a new tenancy's admin policy, in its creating transaction).
func insertPolicy(ctx context.Context, tx pgx.Tx, p Policy) error {
	_, err := tx.Exec(ctx, policyInsert, p.TenancyID, p.ID, p.CompartmentID, p.Name, p.Description, p.Statements,
		tagsOrEmpty(p.FreeformTags))
	return err
}

// Get returns one policy of the tenancy.
func (r *Policies) Get(ctx context.Context, tenancyID, id string) (Policy, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	p, err := scanPolicy(r.pool.QueryRow(ctx, policyGet, tenancyID, id))
	return p, interpretError("getting policy", err)
}

// Create inserts a policy into an active compartment (statements are parsed by the caller).
func (r *Policies) Create(ctx context.Context, p Policy) (Policy, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var out Policy
	err := InTx(ctx, r.pool, func(tx pgx.Tx) error {
		if err := LockActiveCompartment(ctx, tx, p.TenancyID, p.CompartmentID); err != nil {
			return err
		}
		if err := r.quotas.checkCount(ctx, tx, p.TenancyID, QuotaPolicies, 1, countPolicies); err != nil {
			return err
		}
		var err error
		if out, err = scanPolicy(tx.QueryRow(ctx, policyInsert, p.TenancyID, p.ID, p.CompartmentID, p.Name, p.Description,
			p.Statements, tagsOrEmpty(p.FreeformTags))); err != nil {
			return err
		}
		return Notify(ctx, tx, Notification{Kind: TenancyChanged, TenancyID: p.TenancyID})
	})
	return out, nameConflict("creating policy", err, fault.Conflict("name: the tenancy already has a policy named %q", p.Name))
}

// List returns one page of a compartment's policies.
func (r *Policies) List(ctx context.Context, tenancyID, compartmentID, name, state string, p Page) ([]Policy, string, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	args := []any{tenancyID, compartmentID}
	query := `SELECT ` + policyColumns + ` FROM policies WHERE tenancy_id = $1 AND compartment_id = $2`
	if name != "" {
		args = append(args, name)
		query += ` AND name = $` + itoa(len(args))
	}
	query, args = lifecycleFilter(query, args, state)
	return listPage(ctx, r.pool, "listing policies", p, query, args, "time_created", "name", "id", scanPolicy,
		func(x Policy) (time.Time, string, string) { return x.TimeCreated, x.Name, x.ID })
}

// Update changes a policy that check accepts.
func (r *Policies) Update(ctx context.Context, tenancyID, id string, check Check[Policy], patch PolicyPatch) (Policy, error) {
	var out Policy
	err := changeRow(ctx, r.pool, lockedRow(scanPolicy, policyGetLocked, tenancyID, id), check,
		func(ctx context.Context, tx pgx.Tx, _ Policy) error {
			var err error
			tags := tagsPatch(patch.FreeformTags)
			if out, err = scanPolicy(tx.QueryRow(ctx, policyUpdate, tenancyID, id, patch.Name, patch.Description, patch.Statements, tags)); err != nil {
				return err
			}
			return Notify(ctx, tx, Notification{Kind: TenancyChanged, TenancyID: tenancyID})
		})
	return out, nameConflict("updating policy", err, fault.Conflict("name: the tenancy already has a policy with that name"))
}

// Delete marks a policy that check accepts DELETED.
func (r *Policies) Delete(ctx context.Context, tenancyID, id string, check Check[Policy]) error {
	err := changeRow(ctx, r.pool, lockedRow(scanPolicy, policyGetLocked, tenancyID, id), check,
		func(ctx context.Context, tx pgx.Tx, _ Policy) error {
			if _, err := tx.Exec(ctx, policyMarkDeleted, tenancyID, id); err != nil {
				return err
			}
			return Notify(ctx, tx, Notification{Kind: TenancyChanged, TenancyID: tenancyID})
		})
	return interpretError("deleting policy", err)
}

// NotifyChanged tells every node to reload the tenancy's decisions, for a change that sends no notification in its
// own transaction (a queue rename changes what target.queue.name conditions see).
func (r *Policies) NotifyChanged(ctx context.Context, tenancyID string) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	err := Notify(ctx, r.pool, Notification{Kind: TenancyChanged, TenancyID: tenancyID})
	return interpretError("notifying a policy change", err)
}

// OfTenancy lists the tenancy's active policies (the authorizer loads them).
func (r *Policies) OfTenancy(ctx context.Context, tenancyID string) ([]Policy, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, policiesOfTenancy, tenancyID)
	if err != nil {
		return nil, interpretError("listing policies", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Policy, error) { return scanPolicy(row) })
	return out, interpretError("listing policies", err)
}

// CompartmentNode is one compartment of a tenancy's tree (the authorizer caches the tree).
type CompartmentNode struct {
	ID       string
	ParentID *string
	Name     string
	State    string
}

// Tree returns every compartment of the tenancy.
func (r *Compartments) Tree(ctx context.Context, tenancyID string) ([]CompartmentNode, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, `SELECT id, parent_id, name, lifecycle_state FROM compartments WHERE tenancy_id = $1`, tenancyID)
	if err != nil {
		return nil, interpretError("compartment tree", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[CompartmentNode])
	return out, interpretError("compartment tree", err)
}
