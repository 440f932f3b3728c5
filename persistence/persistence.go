// Package persistence is ferry's only door to PostgreSQL: the pgx pool (with OTel tracing), one repository type
// per table with its SQL beside it (the data plane's in sql/messages/*.sql, compiled once by statements.go), the
// LISTEN/NOTIFY listener, and the error mapping.
//
// Tenancy isolation: a statement that serves a tenant's request on a control-plane table (compartments, queues,
// consumer groups, policies, work requests, idempotency keys) takes the tenancy id and puts it first in its
// predicate. The data plane's statements do not: messages are keyed by their queue's number (queues.no, resolved
// from the queue's OCID once per process, queue_numbers.go), and consumers, watches, deduplication keys and a
// queue's consumer groups by the queue's OCID. Their isolation is enforced before they run, when the messaging
// service resolves the queue by a tenancy-scoped lookup (Queues.Get): a data-plane repository trusts the queue it
// is given. Background work (the maintainer's sweeps, the work-request workers) runs across tenancies.
package persistence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferry-mq/ferry/fault"
)

// QueryTimeoutDefault bounds every control-plane statement.
const QueryTimeoutDefault = 10 * time.Second

// ConnectOption adjusts Connect.
type ConnectOption func(*connectOptions)

type connectOptions struct {
	meter metric.Meter
}

// WithMeter records the pool's statements and connections as metrics (Tracer, observePool).
func WithMeter(meter metric.Meter) ConnectOption {
	return func(o *connectOptions) { o.meter = meter }
}

// Connect opens a pool on databaseURL with the OTel query tracer and waits until the database answers.
func Connect(ctx context.Context, databaseURL string, maxConns int32, opts ...ConnectOption) (*pgxpool.Pool, error) {
	var o connectOptions
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("persistence: parsing the database URL: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	tracer, err := NewTracer(o.meter)
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	cfg.ConnConfig.Tracer = tracer
	// Room for each statement that runs on a queue's partitions on all eight of them (statements.go,
	// partitionMarker) beside the others, so that no prepared statement is evicted and prepared again: pgx's
	// default holds 512.
	cfg.ConnConfig.StatementCacheCapacity = 1024
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		registerTextArray(conn)
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("persistence: connecting: %w", err)
	}
	if o.meter != nil {
		for _, observe := range []func(metric.Meter, *pgxpool.Pool) error{observePool, observeDatabase} {
			if err := observe(o.meter, pool); err != nil {
				pool.Close()
				return nil, fmt.Errorf("persistence: %w", err)
			}
		}
	}
	return pool, nil
}

// Store groups the repositories over one pool.
type Store struct {
	Pool           *pgxpool.Pool
	Tenancies      *Tenancies
	Compartments   *Compartments
	Queues         *Queues
	ConsumerGroups *ConsumerGroups
	Consumers      *Consumers
	Policies       *Policies
	WorkRequests   *WorkRequests
	Idempotency    *IdempotencyKeys
	Secrets        *Secrets
	Metrics        *Metrics
	Quotas         *Quotas
	Nodes          *Nodes
	Usage          *Usage
	Partitions     *Partitions
}

// NewStore builds the repositories.
func NewStore(pool *pgxpool.Pool) *Store {
	quotas := &Quotas{pool: pool}
	return &Store{
		Pool:           pool,
		Tenancies:      &Tenancies{pool: pool},
		Compartments:   &Compartments{pool: pool, quotas: quotas},
		Queues:         &Queues{pool: pool, quotas: quotas},
		ConsumerGroups: &ConsumerGroups{pool: pool, quotas: quotas},
		Consumers:      &Consumers{pool: pool},
		Policies:       &Policies{pool: pool, quotas: quotas},
		WorkRequests:   &WorkRequests{pool: pool},
		Idempotency:    &IdempotencyKeys{pool: pool},
		Secrets:        &Secrets{pool: pool},
		Metrics:        NewMetrics(pool),
		Quotas:         quotas,
		Nodes:          &Nodes{pool: pool},
		Usage:          &Usage{pool: pool},
		Partitions:     NewPartitions(pool),
	}
}

// InTx runs fn in a transaction, committing when it returns nil.
func InTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, fn)
}

// Check decides, inside the transaction that holds a row locked, whether a change to it may go ahead: the
// control plane's rules (the caller's if-match etag, the lifecycle states a change needs) run on the row as it is
// at that moment. nil accepts every change.
type Check[T any] func(current T) error

// run applies the check (nil accepts).
func (c Check[T]) run(current T) error {
	if c == nil {
		return nil
	}
	return c(current)
}

// changeRow changes one row in a transaction bounded by the control plane's statement timeout: lock reads the row
// FOR UPDATE, check (the caller's rules) decides on it as it is now, and change writes.
func changeRow[T any](ctx context.Context, pool *pgxpool.Pool, lock func(context.Context, pgx.Tx) (T, error), check Check[T],
	change func(context.Context, pgx.Tx, T) error) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	return InTx(ctx, pool, func(tx pgx.Tx) error {
		cur, err := lock(ctx, tx)
		if err != nil {
			return err
		}
		if err := check.run(cur); err != nil {
			return err
		}
		return change(ctx, tx, cur)
	})
}

// lockedRow is a lock for changeRow: the row that query (… FOR UPDATE) returns for args, read by scan.
func lockedRow[T any](scan func(pgx.Row) (T, error), query string, args ...any) func(context.Context, pgx.Tx) (T, error) {
	return func(ctx context.Context, tx pgx.Tx) (T, error) { return scan(tx.QueryRow(ctx, query, args...)) }
}

// Etag derives a resource's etag from its id and row version (bumped by every update).
func Etag(id string, version int64) string {
	sum := sha256.Sum256([]byte(id + ":" + strconv.FormatInt(version, 10)))
	return hex.EncodeToString(sum[:10])
}

// interpretError maps pgx and PostgreSQL errors to faults: no rows → fault.ErrNotFound, a unique violation →
// Conflict, a missing reference → NotFound, a value out of range → InvalidParameter, an aborted transaction or a
// timeout → Unavailable; anything else is wrapped with the operation.
func interpretError(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return fault.Conflict("%s: a resource with the same unique attributes already exists", op)
		case "23503":
			return fault.NotFound("%s: a referenced resource does not exist", op)
		case "23514", "22001":
			return fault.InvalidParameter("%s: a value is out of range (%s)", op, pgErr.ConstraintName)
		case "40P01", "40001":
			// Aborted to break a deadlock or a serialization conflict: nothing was done, and retrying works.
			return fault.Unavailable(1, "%s: the database aborted a conflicting transaction; retry", op)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fault.Unavailable(1, "%s: the database did not answer in time", op)
	}
	if Unreachable(err) {
		return fault.Unavailable(1, "%s: the database is not reachable; retry", op)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Unreachable reports whether err says the database could not be reached or went away (it is restarting, was
// shut down, the connection broke, or it refuses connections for now): a condition to answer 503 and retry, not
// a fault of the request or of ferry. The HTTP error mapping also applies it to errors that did not pass through
// a repository.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// 08: connection exception; 57P01-57P03: shut down, crashed, not yet accepting connections; 53300: too
		// many connections.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" ||
			pgErr.Code == "57P03" || pgErr.Code == "53300"
	}
	var netErr net.Error
	return pgconn.Timeout(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &netErr) || strings.Contains(err.Error(), "conn closed")
}

// isUniqueViolation reports whether a write failed on a unique constraint.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// isDeadlock reports whether PostgreSQL aborted the transaction to break a deadlock.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, QueryTimeoutDefault)
}
