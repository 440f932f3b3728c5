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
	// maxWeight caps a batch (in weight units: messages, receipts); a call heavier than it still runs, alone.
	maxWeight int
	weight    func(T) int
	run       func(ctx context.Context, key K, items []T) ([]R, error)

	mu      sync.Mutex
	running map[K]*[]*coalescedCall[T, R] // keys with a batch in flight → the calls waiting for the next one
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

func newCoalescer[K comparable, T, R any](maxWeight int, weight func(T) int,
	run func(ctx context.Context, key K, items []T) ([]R, error)) *coalescer[K, T, R] {
	return &coalescer[K, T, R]{maxWeight: maxWeight, weight: weight, run: run, running: map[K]*[]*coalescedCall[T, R]{}}
}

// do runs item, alone or in a batch with the concurrent calls of its key. A caller whose ctx ends while it waits
// returns at once; when its batch had already been sent, the batch's effect on its item stands (as for a
// statement cancelled after it committed).
func (c *coalescer[K, T, R]) do(ctx context.Context, key K, item T) (R, error) {
	call := &coalescedCall[T, R]{ctx: ctx, item: item}
	c.mu.Lock()
	if waiting, busy := c.running[key]; busy {
		call.done = make(chan struct{})
		*waiting = append(*waiting, call)
		c.mu.Unlock()
		select {
		case <-call.done:
			return call.res, call.err
		case <-ctx.Done():
			var zero R
			return zero, ctx.Err()
		}
	}
	c.running[key] = &[]*coalescedCall[T, R]{}
	c.mu.Unlock()
	c.execute(ctx, key, []*coalescedCall[T, R]{call})
	if !c.idle(key) {
		go c.drain(key)
	}
	return call.res, call.err
}

// idle ends the key's run when nobody waits; otherwise the key stays busy for drain.
func (c *coalescer[K, T, R]) idle(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(*c.running[key]) == 0 {
		delete(c.running, key)
		return true
	}
	return false
}

// drain runs the waiting calls of key, batch after batch, until none waits.
func (c *coalescer[K, T, R]) drain(key K) {
	for {
		c.mu.Lock()
		waiting := c.running[key]
		var batch []*coalescedCall[T, R]
		weight, taken := 0, 0
		for _, call := range *waiting {
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
		*waiting = (*waiting)[taken:]
		if len(batch) == 0 {
			delete(c.running, key)
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
