// Package limits keeps one tenancy from hurting another (docs/limits.md): the quotas of each tenancy (defaults in
// Config, overrides in PostgreSQL read into a cache every Refresh), token-bucket rate limits per tenancy and per
// queue, the per-tenancy count of concurrent long polls, and the node's bound on request bytes in flight
// (admission control).
//
// Several nodes share a tenancy's rate limits by a per-node share: each node enforces limit / N, where N is the
// number of live nodes in the ferry_nodes registry (each node writes its row every Refresh). Nothing is exchanged
// per request: a request costs a map lookup and a mutex, never a database round trip. The price is the error of
// the share: a tenancy whose traffic reaches only some of the nodes gets less than its limit (the load balancer
// should spread it), and for up to a few refreshes after a node joins or leaves the sum is off by one node's share.
package limits

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/internal/startstop"
	"github.com/ferry-mq/ferry/persistence"
)

// Defaults of Config.
const (
	// QueueRequestsPerSecondDefault and QueueBytesPerSecondDefault are OCI Queue's published per-queue limits.
	QueueRequestsPerSecondDefault = 1000
	QueueBytesPerSecondDefault    = 10_000_000
	// MaxInFlightBytesDefault bounds the request bodies one node holds at once.
	MaxInFlightBytesDefault = 256 << 20
	// RefreshDefault is how often a node reloads the quota overrides and counts the live nodes.
	RefreshDefault = 2 * time.Second
)

// Config holds the quotas' defaults (a tenancy without an override gets these) and the node's own limits. Zero
// values take the defaults (persistence.*Default for the quotas, the constants above for the rest).
type Config struct {
	Queues                 int64 `env:"FERRY_QUOTA_QUEUES"`                    // default 1000
	ConsumerGroupsPerQueue int64 `env:"FERRY_QUOTA_CONSUMER_GROUPS_PER_QUEUE"` // default 100
	Compartments           int64 `env:"FERRY_QUOTA_COMPARTMENTS"`              // default 1000
	Policies               int64 `env:"FERRY_QUOTA_POLICIES"`                  // default 1000
	LongPolls              int64 `env:"FERRY_QUOTA_LONG_POLLS"`                // default 1000
	Watches                int64 `env:"FERRY_QUOTA_WATCHES"`                   // default FERRY_WATCH_MAX_PER_TENANCY (2000)
	StoredBytes            int64 `env:"FERRY_QUOTA_STORED_BYTES"`              // default 1 TiB
	RequestsPerSecond      int64 `env:"FERRY_QUOTA_REQUESTS_PER_SECOND"`       // default 5000
	BytesPerSecond         int64 `env:"FERRY_QUOTA_BYTES_PER_SECOND"`          // default 50 MB/s (each way)
	// QueueRequestsPerSecond and QueueBytesPerSecond limit each queue's data-plane calls (bytes: each way).
	QueueRequestsPerSecond int64 `env:"FERRY_QUEUE_REQUESTS_PER_SECOND"`
	QueueBytesPerSecond    int64 `env:"FERRY_QUEUE_BYTES_PER_SECOND"`
	// MaxInFlightBytes bounds the request bytes (declared lengths, or the body limit when undeclared) this node
	// serves at once; past it a request is answered 503 with Retry-After before its body is read.
	MaxInFlightBytes int64 `env:"FERRY_MAX_INFLIGHT_BYTES"`
	// Refresh is how often quota overrides are reloaded and the live nodes counted.
	Refresh time.Duration `env:"FERRY_LIMITS_REFRESH"`
	// RatesOff turns the rate limits off (for measurements); quotas and admission still apply.
	RatesOff bool `env:"FERRY_RATE_LIMITS_OFF"`
}

// QuotaDefaults is the quotas' default values by name (persistence.Quotas.SetDefaults).
func (c Config) QuotaDefaults() map[string]int64 {
	d := persistence.BuiltInQuotaDefaults()
	set := func(name string, v int64) {
		if v > 0 {
			d[name] = v
		}
	}
	set(persistence.QuotaQueues, c.Queues)
	set(persistence.QuotaConsumerGroupsPerQueue, c.ConsumerGroupsPerQueue)
	set(persistence.QuotaCompartments, c.Compartments)
	set(persistence.QuotaPolicies, c.Policies)
	set(persistence.QuotaLongPolls, c.LongPolls)
	set(persistence.QuotaWatches, c.Watches)
	set(persistence.QuotaStoredBytes, c.StoredBytes)
	set(persistence.QuotaRequestsPerSecond, c.RequestsPerSecond)
	set(persistence.QuotaBytesPerSecond, c.BytesPerSecond)
	return d
}

func (c *Config) defaults() {
	c.QueueRequestsPerSecond = cmp.Or(c.QueueRequestsPerSecond, QueueRequestsPerSecondDefault)
	c.QueueBytesPerSecond = cmp.Or(c.QueueBytesPerSecond, QueueBytesPerSecondDefault)
	c.MaxInFlightBytes = cmp.Or(c.MaxInFlightBytes, MaxInFlightBytesDefault)
	c.Refresh = cmp.Or(c.Refresh, RefreshDefault)
}

// Service is one node's limits.
type Service struct {
	cfg    Config
	quotas *persistence.Quotas
	nodes  *persistence.Nodes
	logger *slog.Logger
	node   string

	overrides atomic.Pointer[map[string]map[string]int64] // tenancy → quota → value
	liveNodes atomic.Int64

	rates         rateTable
	longPolls     concurrency
	inFlight      admission
	loop          startstop.Base
	refreshed     chan struct{} // signalled after each refresh (a test hook)
	lastFree      time.Time     // when returnMemory last returned memory (under freeMu)
	lastAllocated uint64        // the runtime's allocated bytes at the previous returnMemory (under freeMu)
}

// New builds the service and sets the store's quota defaults from cfg.
func New(cfg Config, store *persistence.Store, logger *slog.Logger) *Service {
	cfg.defaults()
	if logger == nil {
		logger = slog.Default()
	}
	store.Quotas.SetDefaults(cfg.QuotaDefaults())
	var id [8]byte
	_, _ = rand.Read(id[:])
	s := &Service{cfg: cfg, quotas: store.Quotas, nodes: store.Nodes, logger: logger, node: hex.EncodeToString(id[:]),
		refreshed: make(chan struct{}, 1)}
	s.liveNodes.Store(1)
	s.rates.init()
	s.longPolls.init()
	s.inFlight.max = cfg.MaxInFlightBytes
	empty := map[string]map[string]int64{}
	s.overrides.Store(&empty)
	return s
}

// Start registers the node and starts the refresh loop; the first refresh is done when Start returns (or failed:
// the defaults apply until one succeeds).
func (s *Service) Start(ctx context.Context) {
	s.refresh(ctx)
	s.loop.Start(ctx, s.run)
}

// Stop stops the refresh and takes this node out of the registry. Safe to call twice.
func (s *Service) Stop() {
	s.loop.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.nodes.Leave(ctx, s.node); err != nil {
		s.logger.Debug("leaving the node registry", "error", err)
	}
}

func (s *Service) run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.refresh(ctx)
		}
	}
}

// refresh beats this node's heartbeat, counts the live nodes, reloads the overrides and forgets idle buckets.
func (s *Service) refresh(ctx context.Context) {
	// A node is live while it beat within three refreshes: one late beat does not halve the others' shares.
	if n, err := s.nodes.Beat(ctx, s.node, 3*s.cfg.Refresh+time.Second); err != nil {
		s.logger.Warn("node heartbeat", "error", err)
	} else {
		s.liveNodes.Store(int64(n))
	}
	if o, err := s.quotas.Overrides(ctx); err != nil {
		s.logger.Warn("reloading quotas", "error", err)
	} else {
		s.overrides.Store(&o)
	}
	s.rates.sweep(time.Minute)
	s.returnMemory()
	select {
	case s.refreshed <- struct{}{}:
	default:
	}
}

// Refreshed is signalled after each refresh (tests wait for a quota change to reach the node).
func (s *Service) Refreshed() <-chan struct{} { return s.refreshed }

// Refresh reloads at once (tests).
func (s *Service) Refresh(ctx context.Context) { s.refresh(ctx) }

// Limit is a tenancy's value of a quota: its override, or the default.
func (s *Service) Limit(tenancyID, name string) int64 {
	return s.limitOf(s.overridesOf(tenancyID), name)
}

// overridesOf is the tenancy's overrides in the cache (nil when it has none): a request needing several quotas
// looks its tenancy up once.
func (s *Service) overridesOf(tenancyID string) map[string]int64 {
	return (*s.overrides.Load())[tenancyID]
}

// limitOf is a quota's value given the tenancy's overrides: the override, or the default.
func (s *Service) limitOf(overrides map[string]int64, name string) int64 {
	if v, ok := overrides[name]; ok {
		return v
	}
	return s.quotas.Default(name)
}

// LiveNodes is how many nodes share the rate limits (1 when alone or before the first refresh).
func (s *Service) LiveNodes() int { return int(s.liveNodes.Load()) }

// share is this node's share of a tenancy-wide limit: limit / live nodes.
func (s *Service) share(limit int64) float64 { return float64(limit) / float64(s.liveNodes.Load()) }

// Node is this node's id in the registry.
func (s *Service) Node() string { return s.node }

// concurrency counts the calls of each tenancy in progress on this node.
type concurrency struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *concurrency) init() { c.n = map[string]int64{} }

// acquire counts a call in, unless the tenancy has limit in progress.
func (c *concurrency) acquire(tenancyID string, limit int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[tenancyID] >= limit {
		return false
	}
	c.n[tenancyID]++
	return true
}

func (c *concurrency) release(tenancyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[tenancyID]--; c.n[tenancyID] <= 0 {
		delete(c.n, tenancyID)
	}
}

// AcquireLongPoll counts a GetMessages of the tenancy in, unless it has its share of the long-polls quota in
// progress on this node (the quota divided among the live nodes, at least 1). Call release when it returns.
func (s *Service) AcquireLongPoll(tenancyID string) (release func(), ok bool) {
	limit := max(1, int64(s.share(s.Limit(tenancyID, persistence.QuotaLongPolls))))
	if !s.longPolls.acquire(tenancyID, limit) {
		return nil, false
	}
	return func() { s.longPolls.release(tenancyID) }, true
}

// LongPolls is how many GetMessages of the tenancy are in progress on this node.
func (s *Service) LongPolls(tenancyID string) int64 {
	s.longPolls.mu.Lock()
	defer s.longPolls.mu.Unlock()
	return s.longPolls.n[tenancyID]
}

// admission bounds the request bytes in flight on the node.
type admission struct {
	max  int64
	used atomic.Int64
}

// Admit reserves n request bytes on the node, unless that would take it past MaxInFlightBytes (a request larger
// than the bound is admitted alone, when nothing else is in flight). Call release when the request is done.
func (s *Service) Admit(n int64) (release func(), ok bool) {
	a := &s.inFlight
	if now := a.used.Add(n); now > a.max && now != n {
		a.used.Add(-n)
		return nil, false
	}
	return func() { a.used.Add(-n) }, true
}

// InFlightBytes is the request bytes admitted and not yet released (tests, metrics).
func (s *Service) InFlightBytes() int64 { return s.inFlight.used.Load() }
