package authz

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
)

// decisionMemo remembers a tenancy's decisions. A decision is a function of the request's input and of the
// tenancy's statements alone (the module reads no clock and no other data), and a loaded Tenancy never changes: a
// policy change loads a new one, which starts with an empty memo. So a remembered decision is the one the query
// would make again; the hot data-plane requests repeat the same few inputs (a producer's or a consumer's
// token on its queue) thousands of times a second.
type decisionMemo struct {
	decisions sync.Map // memoKey(input) → Decision
	size      atomic.Int32
}

// memoMax bounds a tenancy's memo; past it, the memo starts over (callers with ever-new inputs, such as the
// policy simulator's, cannot make it grow without end).
const memoMax = 8192

// Decide is Authorize with the tenancy's memo: a request whose input was decided before against the same
// statements gets that decision without evaluating the query. The Decision's Matched slice is shared: callers must
// not modify it.
func (e *Engine) Decide(ctx context.Context, in Input) (Decision, error) {
	e.mu.RLock()
	t := e.tenancies[in.TenancyID]
	e.mu.RUnlock()
	if t == nil {
		return e.Authorize(ctx, in)
	}
	var buf [256]byte
	key := string(memoKey(buf[:0], in))
	if d, ok := t.memo.decisions.Load(key); ok {
		if err := ctx.Err(); err != nil { // as Authorize: a caller that has gone away gets no decision
			return Decision{}, fmt.Errorf("authz: authorize: %w", err)
		}
		return d.(Decision), nil
	}
	d, decidedBy, err := e.authorize(ctx, in)
	if err != nil || decidedBy == nil {
		return d, err
	}
	// Remembered by the tenancy whose statements decided: after a policy change in between, that is no longer t.
	if decidedBy.memo.size.Add(1) > memoMax {
		decidedBy.memo.decisions.Clear()
		decidedBy.memo.size.Store(1)
	}
	decidedBy.memo.decisions.Store(key, d)
	return d, nil
}

// memoKey encodes every field of the input, each with its length, so that two different inputs never share a key.
func memoKey(b []byte, in Input) []byte {
	field := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	field(in.TenancyID)
	field(in.Principal)
	b = binary.AppendUvarint(b, uint64(len(in.Groups)))
	for _, g := range in.Groups {
		field(g)
	}
	field(in.Permission)
	field(in.Operation)
	b = binary.AppendUvarint(b, uint64(len(in.CompartmentPath)))
	for _, c := range in.CompartmentPath {
		field(c)
	}
	field(in.CompartmentName)
	field(in.QueueID)
	field(in.QueueName)
	field(in.ConsumerGroupID)
	return b
}
