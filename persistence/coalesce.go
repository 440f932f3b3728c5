package persistence

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// coalescer merges concurrent calls that share a key into one statement ("natural batching", the group commit
// of the data plane). A call that finds no call of its key in flight runs at once, alone; calls that arrive while
// one runs queue up, and run together as one statement as soon as it returns. An idle node adds no delay; a busy
// one runs fewer, larger statements: one round trip, one plan execution and one commit (for puts: one WAL flush)
// for several requests, and the requests of one queue stop contending for the same index pages.
//
// run executes the items of one batch and returns one result per item, in order. A batch that PostgreSQL rejected
// (rolled back whole) runs again item by item, so each caller gets its own error only.
type coalescer[K comparable, T, R any] struct {
	// maxInFlight is how many batches of a key may run at once: calls beyond wait and are batched.
	maxInFlight int
	// maxWeight caps a batch (in weight units: messages, receipts); a call heavier than it still runs, alone.
	maxWeight int
	weight    func(T) int
	run       func(ctx context.Context, key K, items []T) ([]R, error)

	mu      sync.Mutex
	running map[K]*coalescedKey[T, R] // keys with a batch in flight
}

type coalescedKey[T, R any] struct {
	inFlight int
	waiting  []*coalescedCall[T, R] // for the next batch
}

type coalescedCall[T, R any] struct {
	ctx  context.Context
	item T
	res  R
	err  error
	done chan struct{}
}

// batchTimeout bounds a batch that runs on behalf of several callers (none of whose cancellations may stop it).
const batchTimeout = 30 * time.Second

func newCoalescer[K comparable, T, R any](maxInFlight, maxWeight int, weight func(T) int,
	run func(ctx context.Context, key K, items []T) ([]R, error)) *coalescer[K, T, R] {
	return &coalescer[K, T, R]{maxInFlight: max(maxInFlight, 1), maxWeight: maxWeight, weight: weight, run: run,
		running: map[K]*coalescedKey[T, R]{}}
}

// do runs item, alone or in a batch with the concurrent calls of its key. A caller whose ctx ends while it waits
// returns at once; when its batch had already been sent, the batch's effect on its item stands (as for a
// statement cancelled after it committed).
func (c *coalescer[K, T, R]) do(ctx context.Context, key K, item T) (R, error) {
	call := &coalescedCall[T, R]{ctx: ctx, item: item}
	c.mu.Lock()
	k := c.running[key]
	if k == nil {
		k = &coalescedKey[T, R]{}
		c.running[key] = k
	}
	if k.inFlight >= c.maxInFlight {
		call.done = make(chan struct{})
		k.waiting = append(k.waiting, call)
		c.mu.Unlock()
		select {
		case <-call.done:
			return call.res, call.err
		case <-ctx.Done():
			var zero R
			return zero, ctx.Err()
		}
	}
	k.inFlight++
	c.mu.Unlock()
	c.execute(ctx, key, []*coalescedCall[T, R]{call})
	c.mu.Lock()
	if len(k.waiting) == 0 {
		if k.inFlight--; k.inFlight == 0 {
			delete(c.running, key)
		}
		c.mu.Unlock()
	} else {
		c.mu.Unlock()
		go c.drain(key) // in this call's slot, without delaying its answer
	}
	return call.res, call.err
}

// drain runs the waiting calls of key, batch after batch, in the slot of the batch that just finished, until none
// waits; then it gives the slot up.
func (c *coalescer[K, T, R]) drain(key K) {
	for {
		c.mu.Lock()
		k := c.running[key]
		var batch []*coalescedCall[T, R]
		weight, taken := 0, 0
		for _, call := range k.waiting {
			if call.ctx.Err() != nil { // its caller has returned
				close(call.done)
				taken++
				continue
			}
			w := c.weight(call.item)
			if len(batch) > 0 && weight+w > c.maxWeight {
				break
			}
			batch, weight, taken = append(batch, call), weight+w, taken+1
		}
		k.waiting = k.waiting[taken:]
		if len(batch) == 0 {
			if k.inFlight--; k.inFlight == 0 {
				delete(c.running, key)
			}
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), batchTimeout)
		c.execute(ctx, key, batch)
		cancel()
		for _, call := range batch {
			close(call.done)
		}
	}
}

// execute runs a batch and stores each call's result.
func (c *coalescer[K, T, R]) execute(ctx context.Context, key K, batch []*coalescedCall[T, R]) {
	items := make([]T, len(batch))
	for i, call := range batch {
		items[i] = call.item
	}
	results, err := c.run(ctx, key, items)
	var pgErr *pgconn.PgError
	if err != nil && len(batch) > 1 && errors.As(err, &pgErr) {
		// Rolled back whole: each on its own, so that one bad item fails only its own call.
		for _, call := range batch {
			res, err := c.run(ctx, key, []T{call.item})
			call.err = err
			if err == nil {
				call.res = res[0]
			}
		}
		return
	}
	for i, call := range batch {
		call.err = err
		if err == nil {
			call.res = results[i]
		}
	}
}
