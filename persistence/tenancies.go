package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Tenancy is a row of tenancies.
type Tenancy struct {
	ID          string
	Name        string
	TimeCreated time.Time
}

// Tenancies is the repository of the tenancies table.
type Tenancies struct{ pool *pgxpool.Pool }

const (
	tenancyGetByName = `SELECT id, name, time_created FROM tenancies WHERE name = $1`
	tenancyExists    = `SELECT EXISTS (SELECT 1 FROM tenancies WHERE id = $1)`
	tenancyInsert    = `INSERT INTO tenancies (id, name) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING
		RETURNING id, name, time_created`
	// The root compartment carries the tenancy's OCID and name.
	rootCompartmentInsert = `INSERT INTO compartments (tenancy_id, id, parent_id, name, description)
		VALUES ($1, $1, NULL, $2, $3)`
)

// Create inserts a tenancy with its root compartment (described by rootDescription) and the policies it starts
// with, in one transaction, or returns the existing tenancy of that name. created reports which happened.
func (r *Tenancies) Create(ctx context.Context, id, name, rootDescription string, policies []Policy) (t Tenancy, created bool, err error) {
	err = InTx(ctx, r.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, tenancyInsert, id, name).Scan(&t.ID, &t.Name, &t.TimeCreated)
		if err == pgx.ErrNoRows {
			return tx.QueryRow(ctx, tenancyGetByName, name).Scan(&t.ID, &t.Name, &t.TimeCreated)
		}
		if err != nil {
			return err
		}
		created = true
		if _, err = tx.Exec(ctx, rootCompartmentInsert, id, name, rootDescription); err != nil {
			return err
		}
		for _, p := range policies {
			if err := insertPolicy(ctx, tx, p); err != nil {
				return err
			}
		}
		return nil
	})
	t.TimeCreated = t.TimeCreated.UTC()
	return t, created, interpretError("creating tenancy", err)
}

// Exists reports whether the tenancy exists.
func (r *Tenancies) Exists(ctx context.Context, id string) (bool, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var ok bool
	err := r.pool.QueryRow(ctx, tenancyExists, id).Scan(&ok)
	return ok, interpretError("looking up tenancy", err)
}
