package persistence

import (
	"bytes"
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// IdempotencyTTL is how long a retry token replays its first response.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyAbandonedAfter is how long a token may stay "in progress" before a retry takes it over: the node that
// reserved it died before storing or releasing it. Far longer than any request (statements time out after
// QueryTimeoutDefault).
const IdempotencyAbandonedAfter = time.Minute

// StoredResponse is the first successful response to a request with a retry token.
type StoredResponse struct {
	RequestHash []byte
	StatusCode  int // 0 while the first request is still running
	Headers     map[string]string
	Body        []byte
}

// IdempotencyKeys is the repository of the idempotency_keys table (opc-retry-token).
type IdempotencyKeys struct{ pool *pgxpool.Pool }

const (
	idempotencyReserve = `INSERT INTO idempotency_keys (tenancy_id, operation, token, request_hash) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenancy_id, operation, token) DO UPDATE SET request_hash = excluded.request_hash, status_code = 0,
			headers = '{}', body = '', time_created = now()
		WHERE idempotency_keys.time_created < now() - $5::interval
			OR (idempotency_keys.status_code = 0 AND idempotency_keys.time_created < now() - $6::interval)
		RETURNING true`
	idempotencyGet = `SELECT request_hash, status_code, headers, body FROM idempotency_keys
		WHERE tenancy_id = $1 AND operation = $2 AND token = $3`
	idempotencyStore = `UPDATE idempotency_keys SET status_code = $4, headers = $5, body = $6
		WHERE tenancy_id = $1 AND operation = $2 AND token = $3`
	idempotencyRelease = `DELETE FROM idempotency_keys WHERE tenancy_id = $1 AND operation = $2 AND token = $3 AND status_code = 0`
	idempotencyExpire  = `DELETE FROM idempotency_keys WHERE ctid IN (
		SELECT ctid FROM idempotency_keys WHERE time_created < now() - $1::interval LIMIT $2)`
)

// Reserve claims the token for a new request. When the token is already taken it returns the stored response
// (StatusCode 0 when that request is still running) and reserved=false.
func (r *IdempotencyKeys) Reserve(ctx context.Context, tenancyID, operation, token string, hash []byte) (prior *StoredResponse, reserved bool, err error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var ok bool
	err = r.pool.QueryRow(ctx, idempotencyReserve, tenancyID, operation, token, hash, IdempotencyTTL.String(),
		IdempotencyAbandonedAfter.String()).Scan(&ok)
	if err == nil {
		return nil, true, nil
	}
	if err != pgx.ErrNoRows {
		return nil, false, interpretError("reserving retry token", err)
	}
	var s StoredResponse
	err = r.pool.QueryRow(ctx, idempotencyGet, tenancyID, operation, token).Scan(&s.RequestHash, &s.StatusCode, &s.Headers, &s.Body)
	if err == pgx.ErrNoRows { // released between the two statements: try once more
		return r.Reserve(ctx, tenancyID, operation, token, hash)
	}
	return &s, false, interpretError("reading retry token", err)
}

// SameRequest reports whether hash matches the stored request.
func (s *StoredResponse) SameRequest(hash []byte) bool { return bytes.Equal(s.RequestHash, hash) }

// Store keeps the response of the request that reserved the token.
func (r *IdempotencyKeys) Store(ctx context.Context, tenancyID, operation, token string, status int, headers map[string]string, body []byte) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	// body and headers are NOT NULL: a response without a body (202) stores an empty one, not NULL.
	if body == nil {
		body = []byte{}
	}
	if headers == nil {
		headers = map[string]string{}
	}
	_, err := r.pool.Exec(ctx, idempotencyStore, tenancyID, operation, token, status, headers, body)
	return interpretError("storing retry token", err)
}

// Release frees a token whose request failed, so that a retry runs again.
func (r *IdempotencyKeys) Release(ctx context.Context, tenancyID, operation, token string) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := r.pool.Exec(ctx, idempotencyRelease, tenancyID, operation, token)
	return interpretError("releasing retry token", err)
}

// Expire deletes up to batch tokens older than IdempotencyTTL and returns how many it deleted.
func (r *IdempotencyKeys) Expire(ctx context.Context, batch int) (int64, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	tag, err := r.pool.Exec(ctx, idempotencyExpire, IdempotencyTTL.String(), batch)
	return tag.RowsAffected(), interpretError("expiring retry tokens", err)
}
