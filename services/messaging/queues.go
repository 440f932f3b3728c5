package messaging

import (
	"context"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/persistence"
)

// queueCache keeps queue settings for a short time so that the data plane does not read the queues table on every
// call. Settings changes reach every node within queueCacheTTL.
type queueCache struct {
	queues  *persistence.Queues
	mu      sync.Mutex
	byID    map[string]cachedQueue
	loading map[string]bool // a refresh of the queue is running: the other callers use the entry they have
	// gen counts forgets: a refresh that read the queue before a forget does not store what it read (it may
	// predate the change that the forget announced), so a node reads its own writes.
	gen uint64
}

const queueCacheTTL = time.Second

type cachedQueue struct {
	q       persistence.Queue
	fetched time.Time
}

func newQueueCache(q *persistence.Queues) *queueCache {
	return &queueCache{queues: q, byID: map[string]cachedQueue{}, loading: map[string]bool{}}
}

// active returns the queue when it belongs to the tenancy and is ACTIVE; otherwise 404 (or 409 while deleting).
func (c *queueCache) active(ctx context.Context, tenancyID, queueID string) (persistence.Queue, error) {
	c.mu.Lock()
	e, ok := c.byID[queueID]
	ok = ok && e.q.TenancyID == tenancyID
	// When the entry is only stale and someone is refreshing it, use it: one query per queue per TTL, not one per
	// concurrent request at each expiry.
	refresh := !ok || (time.Since(e.fetched) > queueCacheTTL && !c.loading[queueID])
	if refresh && ok {
		c.loading[queueID] = true
	}
	gen := c.gen
	c.mu.Unlock()
	if refresh {
		q, err := c.queues.Get(ctx, tenancyID, queueID)
		c.mu.Lock()
		if ok {
			delete(c.loading, queueID)
		}
		if err == nil {
			e = cachedQueue{q: q, fetched: time.Now()}
			if c.gen == gen {
				if len(c.byID) > 100000 {
					clear(c.byID)
				}
				c.byID[queueID] = e
			}
		}
		c.mu.Unlock()
		if err != nil {
			return q, err
		}
	}
	switch e.q.LifecycleState {
	case persistence.StateActive:
		return e.q, nil
	case persistence.StateDeleted:
		return e.q, fault.ErrNotFound
	default:
		return e.q, fault.IncorrectState("queue %s is %s", queueID, e.q.LifecycleState)
	}
}

// forget drops a queue from the cache (its settings changed on this node).
func (c *queueCache) forget(queueID string) {
	c.mu.Lock()
	delete(c.byID, queueID)
	c.gen++
	c.mu.Unlock()
}
