package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Work request statuses and operation types.
const (
	WorkAccepted   = "ACCEPTED"
	WorkInProgress = "IN_PROGRESS"
	WorkSucceeded  = "SUCCEEDED"
	WorkFailed     = "FAILED"

	OpCreateQueue         = "CREATE_QUEUE"
	OpUpdateQueue         = "UPDATE_QUEUE"
	OpMoveQueue           = "MOVE_QUEUE"
	OpDeleteQueue         = "DELETE_QUEUE"
	OpPurgeQueue          = "PURGE_QUEUE"
	OpCreateConsumerGroup = "CREATE_CONSUMER_GROUP"
	OpUpdateConsumerGroup = "UPDATE_CONSUMER_GROUP"
	OpDeleteConsumerGroup = "DELETE_CONSUMER_GROUP"
)

// What a work request does to its resource (OCI's action types).
const (
	ActionCreated    = "CREATED"
	ActionUpdated    = "UPDATED"
	ActionDeleted    = "DELETED"
	ActionInProgress = "IN_PROGRESS"
	ActionRelated    = "RELATED" // the work request failed: the resource is related to it, not changed by it
)

// WorkRequest is a row of work_requests: an asynchronous operation and its progress.
type WorkRequest struct {
	TenancyID       string
	ID              string
	CompartmentID   string
	OperationType   string
	Status          string
	ResourceType    string
	ResourceID      string
	ActionType      string
	Params          map[string]any
	PercentComplete float32
	ErrorMessage    string
	TimeAccepted    time.Time
	TimeStarted     *time.Time
	TimeFinished    *time.Time
}

// Etag of the work request's current state: it changes with its status and its progress.
func (w WorkRequest) Etag() string { return Etag(w.ID+w.Status, int64(w.PercentComplete)) }

// WorkRequests is the repository of the work_requests table.
type WorkRequests struct{ pool *pgxpool.Pool }

// WorkRequestStaleAfter is how long a claimed work request may go without a heartbeat before another node takes
// it over.
const WorkRequestStaleAfter = time.Minute

const workRequestColumns = `tenancy_id, id, compartment_id, operation_type, status, resource_type, resource_id, action_type,
	params, percent_complete, error_message, time_accepted, time_started, time_finished`

const (
	workRequestInsert = `INSERT INTO work_requests (tenancy_id, id, compartment_id, operation_type, resource_type, resource_id, action_type, params)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ` + workRequestColumns
	// A change made at once (a create, an update, a move): its work request is recorded in the change's
	// transaction, already finished.
	workRequestInsertCompleted = `INSERT INTO work_requests (tenancy_id, id, compartment_id, operation_type, resource_type, resource_id,
			action_type, params, status, percent_complete, time_started, time_finished)
		VALUES ($1, $2, $3, $4, $5, $6, $7, '{}', 'SUCCEEDED', 100, now(), now())`
	workRequestGet = `SELECT ` + workRequestColumns + ` FROM work_requests WHERE tenancy_id = $1 AND id = $2`
	// Claim the oldest accepted work request, or one whose worker stopped beating.
	workRequestClaim = `WITH next AS (
			SELECT tenancy_id, id FROM work_requests
			WHERE status = 'ACCEPTED' OR (status = 'IN_PROGRESS' AND time_heartbeat < now() - $1::interval)
			ORDER BY time_accepted LIMIT 1 FOR UPDATE SKIP LOCKED)
		UPDATE work_requests w SET status = 'IN_PROGRESS', time_started = coalesce(w.time_started, now()), time_heartbeat = now()
		FROM next WHERE w.tenancy_id = next.tenancy_id AND w.id = next.id RETURNING ` + workRequestColumnsW
	workRequestProgress = `UPDATE work_requests SET percent_complete = $3, time_heartbeat = now() WHERE tenancy_id = $1 AND id = $2`
	workRequestFinish   = `UPDATE work_requests SET status = $3, error_message = $4, time_finished = now(),
		percent_complete = CASE WHEN $3 = 'SUCCEEDED' THEN 100 ELSE percent_complete END,
		action_type = CASE WHEN $3 = 'FAILED' THEN 'RELATED' ELSE action_type END
		WHERE tenancy_id = $1 AND id = $2`
)

const workRequestColumnsW = `w.tenancy_id, w.id, w.compartment_id, w.operation_type, w.status, w.resource_type, w.resource_id,
	w.action_type, w.params, w.percent_complete, w.error_message, w.time_accepted, w.time_started, w.time_finished`

func scanWorkRequest(row pgx.Row) (WorkRequest, error) {
	var w WorkRequest
	err := row.Scan(&w.TenancyID, &w.ID, &w.CompartmentID, &w.OperationType, &w.Status, &w.ResourceType, &w.ResourceID,
		&w.ActionType, &w.Params, &w.PercentComplete, &w.ErrorMessage, &w.TimeAccepted, &w.TimeStarted, &w.TimeFinished)
	w.TimeAccepted = w.TimeAccepted.UTC()
	for _, t := range []*time.Time{w.TimeStarted, w.TimeFinished} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return w, err
}

func insertWorkRequest(ctx context.Context, tx pgx.Tx, w WorkRequest) (WorkRequest, error) {
	if w.Params == nil {
		w.Params = map[string]any{}
	}
	return scanWorkRequest(tx.QueryRow(ctx, workRequestInsert, w.TenancyID, w.ID, w.CompartmentID, w.OperationType,
		w.ResourceType, w.ResourceID, w.ActionType, w.Params))
}

// recordCompleted records, inside the transaction of a change made at once, its work request w (ID, OperationType,
// ResourceType, ActionType) as SUCCEEDED; an OCI client learns what was changed from it.
func recordCompleted(ctx context.Context, tx pgx.Tx, w WorkRequest, tenancyID, compartmentID, resourceID string) error {
	_, err := tx.Exec(ctx, workRequestInsertCompleted, tenancyID, w.ID, compartmentID, w.OperationType, w.ResourceType,
		resourceID, w.ActionType)
	return err
}

// Get returns one work request of the tenancy.
func (r *WorkRequests) Get(ctx context.Context, tenancyID, id string) (WorkRequest, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	w, err := scanWorkRequest(r.pool.QueryRow(ctx, workRequestGet, tenancyID, id))
	return w, interpretError("getting work request", err)
}

// WorkRequestFilter selects work requests for a list.
type WorkRequestFilter struct {
	CompartmentID string // "" = every compartment of the tenancy
	ResourceID    string // "" = every resource
	ID            string // "" = every work request
}

// List returns one page of the tenancy's work requests that f selects, newest first.
func (r *WorkRequests) List(ctx context.Context, tenancyID string, f WorkRequestFilter, p Page) ([]WorkRequest, string, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	args := []any{tenancyID}
	query := `SELECT ` + workRequestColumns + ` FROM work_requests WHERE tenancy_id = $1`
	for _, c := range []struct{ column, value string }{{"compartment_id", f.CompartmentID}, {"resource_id", f.ResourceID}, {"id", f.ID}} {
		if c.value != "" {
			args = append(args, c.value)
			query += ` AND ` + c.column + ` = $` + itoa(len(args))
		}
	}
	p.SortByName, p.Descending = false, true
	return listPage(ctx, r.pool, "listing work requests", p, query, args, "time_accepted", "id", "id", scanWorkRequest,
		func(w WorkRequest) (time.Time, string, string) { return w.TimeAccepted, w.ID, w.ID })
}

// Claim takes the next work request to execute, or returns ok=false when there is none.
func (r *WorkRequests) Claim(ctx context.Context) (w WorkRequest, ok bool, err error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	w, err = scanWorkRequest(r.pool.QueryRow(ctx, workRequestClaim, WorkRequestStaleAfter.String()))
	if err == pgx.ErrNoRows {
		return w, false, nil
	}
	return w, err == nil, interpretError("claiming work request", err)
}

// Progress records progress and renews the claim.
func (r *WorkRequests) Progress(ctx context.Context, tenancyID, id string, percent float32) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := r.pool.Exec(ctx, workRequestProgress, tenancyID, id, percent)
	return interpretError("work request progress", err)
}

// Finish records the outcome.
func (r *WorkRequests) Finish(ctx context.Context, tenancyID, id, status, errorMessage string) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := r.pool.Exec(ctx, workRequestFinish, tenancyID, id, status, errorMessage)
	return interpretError("finishing work request", err)
}
