package persistence

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// queueNumbers resolves a queue's OCID to the number that keys its messages (migration 0007). A number never
// changes and is never reused, so a resolved one is kept for the life of the process: one query per queue per
// process. Deleted queues keep their row (and number) until their messages are gone.
type queueNumbers struct {
	pool *pgxpool.Pool
	byID sync.Map // queue OCID → int64
}

func newQueueNumbers(pool *pgxpool.Pool) *queueNumbers { return &queueNumbers{pool: pool} }

// of answers the queue's number; fault.ErrNotFound when no queue has that OCID.
func (q *queueNumbers) of(ctx context.Context, queueID string) (int64, error) {
	if no, ok := q.byID.Load(queueID); ok {
		return no.(int64), nil
	}
	var no int64
	if err := q.pool.QueryRow(ctx, `SELECT no FROM queues WHERE id = $1`, queueID).Scan(&no); err != nil {
		return 0, interpretError("resolving the queue", err)
	}
	q.byID.Store(queueID, no)
	return no, nil
}

// queueNoOfParam1 is the number of the queue whose OCID is $1, in SQL: statements that also read tables keyed by
// OCID (consumers, consumer groups) take the OCID and look the number up once per statement.
const queueNoOfParam1 = `(SELECT q.no FROM queues q WHERE q.id = $1)`
