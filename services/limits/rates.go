package limits

import (
	"math"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/persistence"
)

// tokenBucket holds up to one second of its rate. A request takes one token; bytes may take the bucket into debt
// (a 2 MB put is admitted by a bucket of 1 MB/s when it is not in debt), and the debt is paid by waiting.
type tokenBucket struct {
	tokens float64
	last   time.Duration // when it was last refilled (since the table's start); 0 = never: full
}

func (b *tokenBucket) refill(now time.Duration, rate float64) {
	if b.last == 0 {
		b.tokens, b.last = rate, now
		return
	}
	b.tokens = min(rate, b.tokens+rate*(now-b.last).Seconds())
	b.last = now
}

// rateKey names a bucket set: a tenancy (queue "") or one of its queues. Keyed by the caller's tenancy, a
// queue's buckets cannot be drained by a caller of another tenancy who names the queue.
type rateKey struct{ tenancyID, queueID string }

// rateState is one key's buckets: requests, bytes in, bytes out.
type rateState struct {
	mu                sync.Mutex
	requests, in, out tokenBucket
	lastUse           time.Duration
}

// rateTable holds the buckets of the keys seen in the last minute.
type rateTable struct {
	start time.Time
	mu    sync.RWMutex
	m     map[rateKey]*rateState

	// Tests only (nil otherwise): beforeGet runs when get is asked for a key's bucket, sweeping when sweep holds
	// the table's lock; together they set up the interleavings of requests and sweeps.
	beforeGet func(rateKey)
	sweeping  func()
}

func (t *rateTable) init() {
	t.start = time.Now()
	t.m = map[rateKey]*rateState{}
}

func (t *rateTable) now() time.Duration { return time.Since(t.start) + 1 } // never 0, which means "never"

func (t *rateTable) get(k rateKey) *rateState {
	if t.beforeGet != nil {
		t.beforeGet(k)
	}
	t.mu.RLock()
	st := t.m[k]
	t.mu.RUnlock()
	if st == nil {
		t.mu.Lock()
		if st = t.m[k]; st == nil {
			st = &rateState{}
			t.m[k] = st
		}
		t.mu.Unlock()
	}
	return st
}

// sweep forgets the keys unused for idle: memory follows the active tenancies and queues, not every one ever seen.
func (t *rateTable) sweep(idle time.Duration) {
	cut := t.now() - idle
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sweeping != nil {
		t.sweeping()
	}
	for k, st := range t.m {
		st.mu.Lock()
		old := st.lastUse < cut
		st.mu.Unlock()
		if old {
			delete(t.m, k)
		}
	}
}

// waitOf is how long a bucket must refill from tokens to need, at rate, in whole seconds (at least 1, at most
// 60): the Retry-After of a refusal.
func waitOf(tokens, need, rate float64) int {
	if rate <= 0 {
		return 60
	}
	return int(min(60, max(1, math.Ceil((need-tokens)/rate))))
}

// Refusal says which limit refused a request and when to retry.
type Refusal struct {
	Limit      string // the quota's name (requests-per-second, bytes-per-second) or the queue's limit
	Queue      bool   // the queue's limit, not the tenancy's
	RetryAfter int    // seconds
}

// check refills st's buckets at the given rates and reports whether a request with in bytes may go (tokens
// left, and no byte bucket in debt). Called with st.mu held.
func check(st *rateState, now time.Duration, rps, bytesPerSecond float64) (limit string, retryAfter int) {
	st.requests.refill(now, rps)
	st.in.refill(now, bytesPerSecond)
	st.out.refill(now, bytesPerSecond)
	st.lastUse = now
	switch {
	case st.requests.tokens < 1:
		return persistence.QuotaRequestsPerSecond, waitOf(st.requests.tokens, 1, rps)
	case st.in.tokens < 0:
		return persistence.QuotaBytesPerSecond, waitOf(st.in.tokens, 0, bytesPerSecond)
	case st.out.tokens < 0:
		return persistence.QuotaBytesPerSecond, waitOf(st.out.tokens, 0, bytesPerSecond)
	}
	return "", 0
}

// AllowRequest admits a request of the tenancy (and of the queue, when queueID is not "") with in request bytes,
// or says which rate limit refuses it. An admitted request takes a token and its bytes from every bucket it
// passed; a refused one takes nothing.
func (s *Service) AllowRequest(tenancyID, queueID string, in int64) (Refusal, bool) {
	if s.cfg.RatesOff {
		return Refusal{}, true
	}
	now := s.rates.now()
	// Both buckets are found before either is locked: the sweep holds the table's lock while it locks each bucket
	// in turn, so a request that asked the table for its queue's bucket while holding its tenancy's would wait for
	// the sweep, which waits for that request (two requests of make test hung so for 17 minutes).
	t := s.rates.get(rateKey{tenancyID: tenancyID})
	var q *rateState
	if queueID != "" {
		q = s.rates.get(rateKey{tenancyID: tenancyID, queueID: queueID})
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	o := s.overridesOf(tenancyID)
	if limit, wait := check(t, now, s.share(s.limitOf(o, persistence.QuotaRequestsPerSecond)),
		s.share(s.limitOf(o, persistence.QuotaBytesPerSecond))); limit != "" {
		return Refusal{Limit: limit, RetryAfter: wait}, false
	}
	if q != nil {
		q.mu.Lock() // always after the tenancy's: one order, no deadlock
		defer q.mu.Unlock()
		if limit, wait := check(q, now, s.share(s.cfg.QueueRequestsPerSecond), s.share(s.cfg.QueueBytesPerSecond)); limit != "" {
			return Refusal{Limit: limit, Queue: true, RetryAfter: wait}, false
		}
		q.requests.tokens--
		q.in.tokens -= float64(in)
	}
	t.requests.tokens--
	t.in.tokens -= float64(in)
	return Refusal{}, true
}

// Charge takes bytes known only after a request was served from its buckets: in, request bytes of a body of
// undeclared length; out, the response's bytes. They may take the buckets into debt, which refuses the next
// requests until it is paid.
func (s *Service) Charge(tenancyID, queueID string, in, out int64) {
	if s.cfg.RatesOff || (in == 0 && out == 0) {
		return
	}
	charge := func(k rateKey) {
		st := s.rates.get(k)
		st.mu.Lock()
		st.in.tokens -= float64(in)
		st.out.tokens -= float64(out)
		st.mu.Unlock()
	}
	charge(rateKey{tenancyID: tenancyID})
	if queueID != "" {
		charge(rateKey{tenancyID: tenancyID, queueID: queueID})
	}
}
