package limits

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/persistence"
)

// newService is a service over a store without a database: enough for the buckets, slots and admission, which
// never touch it (only Start's refresh does).
func newService(t testing.TB, cfg Config) *Service {
	t.Helper()
	return New(cfg, persistence.NewStore(nil), nil)
}

// overrides sets the cached quota overrides, as a refresh would.
func (s *Service) setOverrides(o map[string]map[string]int64) { s.overrides.Store(&o) }

func TestBucketAdmitsItsRateAndBurst(t *testing.T) {
	s := newService(t, Config{})
	s.setOverrides(map[string]map[string]int64{"t": {persistence.QuotaRequestsPerSecond: 10}})
	admitted := 0
	for range 100 {
		if _, ok := s.AllowRequest("t", "", 0); ok {
			admitted++
		}
	}
	require.Equal(t, 10, admitted, "a full bucket holds one second of the rate")
	r, ok := s.AllowRequest("t", "", 0)
	require.False(t, ok)
	require.Equal(t, Refusal{Limit: persistence.QuotaRequestsPerSecond, RetryAfter: 1}, r)
	_, ok = s.AllowRequest("other", "", 0)
	require.True(t, ok, "another tenancy has its own bucket")
	time.Sleep(250 * time.Millisecond)
	admitted = 0
	for range 100 {
		if _, ok := s.AllowRequest("t", "", 0); ok {
			admitted++
		}
	}
	require.InDelta(t, 2.5, admitted, 1.6, "the bucket refills at its rate")
}

func TestBytesTakeTheBucketIntoDebt(t *testing.T) {
	s := newService(t, Config{})
	s.setOverrides(map[string]map[string]int64{"t": {persistence.QuotaBytesPerSecond: 1000}})
	_, ok := s.AllowRequest("t", "", 5000)
	require.True(t, ok, "a body larger than the bucket passes a bucket that is not in debt")
	r, ok := s.AllowRequest("t", "", 10)
	require.False(t, ok)
	require.Equal(t, persistence.QuotaBytesPerSecond, r.Limit)
	require.Equal(t, 4, r.RetryAfter, "the debt of ~4000 bytes takes 4 s to pay at 1000 B/s")
	// Response bytes are charged after the call: the next one waits for them.
	s.setOverrides(map[string]map[string]int64{"u": {persistence.QuotaBytesPerSecond: 1000}})
	_, ok = s.AllowRequest("u", "", 0)
	require.True(t, ok)
	s.Charge("u", "", 0, 3000)
	_, ok = s.AllowRequest("u", "", 0)
	require.False(t, ok)
}

func TestQueueBucketsPerTenancy(t *testing.T) {
	s := newService(t, Config{QueueRequestsPerSecond: 5})
	for range 5 {
		_, ok := s.AllowRequest("t", "q", 0)
		require.True(t, ok)
	}
	r, ok := s.AllowRequest("t", "q", 0)
	require.False(t, ok)
	require.True(t, r.Queue)
	_, ok = s.AllowRequest("t", "q2", 0)
	require.True(t, ok, "the tenancy's other queue")
	_, ok = s.AllowRequest("intruder", "q", 0)
	require.True(t, ok, "a caller of another tenancy naming the queue drains only its own buckets")
}

func TestShareAmongNodes(t *testing.T) {
	s := newService(t, Config{})
	s.setOverrides(map[string]map[string]int64{"t": {persistence.QuotaRequestsPerSecond: 30, persistence.QuotaLongPolls: 3}})
	s.liveNodes.Store(3)
	admitted := 0
	for range 100 {
		if _, ok := s.AllowRequest("t", "", 0); ok {
			admitted++
		}
	}
	require.Equal(t, 10, admitted, "a third of the rate on each of three nodes")
	release, ok := s.AcquireLongPoll("t")
	require.True(t, ok)
	_, ok = s.AcquireLongPoll("t")
	require.False(t, ok, "one long poll: a third of three")
	release()
	_, ok = s.AcquireLongPoll("t")
	require.True(t, ok)
	require.EqualValues(t, 1, s.LongPolls("t"))
}

func TestAdmission(t *testing.T) {
	s := newService(t, Config{MaxInFlightBytes: 100})
	r1, ok := s.Admit(60)
	require.True(t, ok)
	_, ok = s.Admit(50)
	require.False(t, ok)
	r2, ok := s.Admit(40)
	require.True(t, ok)
	r1()
	r2()
	require.Zero(t, s.InFlightBytes())
	r3, ok := s.Admit(500)
	require.True(t, ok, "a request larger than the bound passes alone")
	_, ok = s.Admit(1)
	require.False(t, ok)
	r3()
}

func TestSweepForgetsIdleKeys(t *testing.T) {
	s := newService(t, Config{})
	s.AllowRequest("t", "q", 0)
	require.Len(t, s.rates.m, 2)
	s.rates.sweep(0)
	require.Empty(t, s.rates.m)
}

// A sweep that takes the table between a request's lookups of its tenancy's and its queue's buckets: the sweep
// waits for each bucket's lock in turn, so a request must not hold one while it waits for the table (it did, and
// two requests of make test hung for 17 minutes). Deterministic: the hooks place the sweep exactly there.
func TestSweepBetweenARequestsLookups(t *testing.T) {
	s := newService(t, Config{})
	s.AllowRequest("t", "q", 0) // both buckets exist, and the sweep will visit them
	sweepHolds := make(chan struct{})
	s.rates.sweeping = func() { close(sweepHolds) }
	var once sync.Once
	s.rates.beforeGet = func(k rateKey) {
		if k.queueID != "" { // the request asks for its queue's bucket: first, the sweep takes the table
			once.Do(func() {
				go s.rates.sweep(time.Hour)
				<-sweepHolds
			})
		}
	}
	done := make(chan bool)
	go func() {
		_, ok := s.AllowRequest("t", "q", 0)
		done <- ok
	}()
	select {
	case ok := <-done:
		require.True(t, ok)
	case <-time.After(5 * time.Second):
		t.Fatal("the request and the sweep wait for each other")
	}
}

func BenchmarkAllowRequest(b *testing.B) {
	s := newService(b, Config{})
	s.setOverrides(map[string]map[string]int64{"t": {persistence.QuotaRequestsPerSecond: 1 << 40, persistence.QuotaBytesPerSecond: 1 << 50}})
	s.cfg.QueueRequestsPerSecond, s.cfg.QueueBytesPerSecond = 1<<40, 1<<50
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := s.AllowRequest("t", "q", 100); !ok {
				b.Fatal("refused")
			}
		}
	})
}
