// Package push serves watches: push consumers on a WebSocket (DESIGN section 7, "Watch"). A watch is a
// messaging.Subscription (leases to one named consumer, shared waiters, ordered groups, single active consumer)
// with a window of unacknowledged messages, commit and negative frames, pings, and a registration in the
// consumers table that this node heartbeats, so that every node lists it and a dead one is noticed.
package push

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/internal/startstop"
	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/services/messaging"
	"github.com/ferry-mq/ferry/services/telemetry"
)

// Config tunes the watches; zero values take the defaults.
type Config struct {
	// PingInterval is how often the server pings each consumer. Default 5s.
	PingInterval time.Duration `env:"FERRY_WATCH_PING_INTERVAL" envDefault:"5s"`
	// DeadAfter: a consumer that has not answered a ping for this long is dead, and its messages go to the
	// group's other consumers. Default 15s.
	DeadAfter time.Duration `env:"FERRY_WATCH_DEAD_AFTER" envDefault:"15s"`
	// Heartbeat is how often this node renews its watches' registrations. Default 3s (below
	// messaging.WatchLiveness / 3).
	Heartbeat time.Duration `env:"FERRY_WATCH_HEARTBEAT" envDefault:"3s"`
	// Lease is how long a pushed message stays leased without being renewed; the lease is renewed while the
	// consumer lives, so it only matters when a node dies. Default 30s.
	Lease time.Duration `env:"FERRY_WATCH_LEASE" envDefault:"30s"`
	// WriteTimeout closes a watch whose consumer does not read a frame within it (a slow consumer cannot make the
	// server buffer: nothing more is leased until a frame is written). Default 10s.
	WriteTimeout time.Duration `env:"FERRY_WATCH_WRITE_TIMEOUT" envDefault:"10s"`
	// MaxPerTenancy caps a tenancy's open watches across all nodes. Default 2000.
	MaxPerTenancy int `env:"FERRY_WATCH_MAX_PER_TENANCY" envDefault:"2000"`
	// WatchesOf, when set, is a tenancy's cap in place of MaxPerTenancy: its watches quota (services/limits).
	WatchesOf func(tenancyID string) int `env:"-"`
}

func (c *Config) defaults() {
	if c.PingInterval <= 0 {
		c.PingInterval = 5 * time.Second
	}
	if c.DeadAfter <= 0 {
		c.DeadAfter = 15 * time.Second
	}
	if c.Heartbeat <= 0 || c.Heartbeat > messaging.WatchLiveness/3 {
		c.Heartbeat = min(3*time.Second, messaging.WatchLiveness/3)
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	c.Lease = max(c.Lease, 3*time.Second)
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.MaxPerTenancy <= 0 {
		c.MaxPerTenancy = 2000
	}
}

const (
	// maxFrame bounds a client frame: a commit of a whole window of receipts fits easily. (A watch's window is
	// bounded by the API: openapi.MaxWatchWindow.)
	maxFrame = 1 << 20
	// coalesceKicks is how long the heartbeat waits after a ConsumersChanged, so that a burst of them is one
	// heartbeat.
	coalesceKicks = 50 * time.Millisecond
)

// Service holds this node's watches.
type Service struct {
	cfg       Config
	messaging *messaging.Service
	consumers *persistence.Consumers
	logger    *slog.Logger

	heartbeats startstop.Base
	mu         sync.Mutex
	sessions   map[string]*session // by session id
	closed     bool
	wg         sync.WaitGroup // sessions
	kick       chan struct{}  // buffered 1: heartbeat now
}

// ConsumersChanged makes the heartbeat run at once when this node holds a watch on the queue (a consumer may
// have been removed: its watch must stop and release promptly, not at the next heartbeat).
func (s *Service) ConsumersChanged(queueID string) {
	s.mu.Lock()
	found := false
	for _, ss := range s.sessions {
		if ss.sub.QueueID() == queueID {
			found = true
			break
		}
	}
	s.mu.Unlock()
	if found {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// New builds the service.
func New(cfg Config, msgs *messaging.Service, store *persistence.Store, inst *telemetry.Instruments, logger *slog.Logger) *Service {
	cfg.defaults()
	if logger == nil {
		logger = slog.Default()
	}
	s := &Service{cfg: cfg, messaging: msgs, consumers: store.Consumers, logger: logger,
		sessions: map[string]*session{}, kick: make(chan struct{}, 1)}
	if inst != nil && inst.Meter != nil {
		_, _ = inst.Meter.Int64ObservableGauge("ferry.watches.open",
			metric.WithDescription("Watches (push consumers) open on this node."), metric.WithUnit("{watch}"),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(int64(s.Open()))
				return nil
			}))
	}
	return s
}

// Start starts the heartbeat of this node's watches. Safe to call twice; does nothing after Stop.
func (s *Service) Start(ctx context.Context) {
	// s.mu is held so that a Stop cannot come between the check of closed and the start, leaving a heartbeat
	// running after it. No deadlock with a Stop waiting for the heartbeat (which takes s.mu): that Stop set closed
	// first, so this Start returns before it starts anything.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.heartbeats.Start(ctx, s.heartbeat)
}

// Stop closes every watch (their consumers' messages are released for the other nodes) and stops the
// heartbeat. Safe to call twice.
func (s *Service) Stop() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		for _, ss := range s.sessions {
			ss.end(websocket.StatusGoingAway, "the server is shutting down")
		}
	}
	s.mu.Unlock()
	s.heartbeats.Stop()
	s.wg.Wait()
}

// Open is the number of watches open on this node.
func (s *Service) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// WatchMessages upgrades to a WebSocket and pushes the consumer group's messages to the consumer.
func (s *Service) WatchMessages(c *gin.Context, queueID api.QueueIdPath, params api.WatchMessagesParams) {
	if !isUpgrade(c.Request) {
		apierror.Write(c, apierror.New(http.StatusUpgradeRequired, "UpgradeRequired",
			"WatchMessages is a WebSocket: send Connection: Upgrade and Upgrade: websocket"))
		return
	}
	principal := iam.PrincipalFrom(c.Request.Context())
	if principal == nil {
		apierror.Write(c, fault.NotAuthenticated("no principal"))
		return
	}
	consumerID := httpapi.Deref(params.XFerryConsumerId)
	if consumerID == "" {
		consumerID = "watch-" + randomHex(8)
	}
	window := openapi.DefaultWatchWindow
	if params.Window != nil {
		window = *params.Window
	}
	if window < 1 || window > openapi.MaxWatchWindow {
		apierror.Write(c, fault.InvalidParameter("window: must be 1 to %d", openapi.MaxWatchWindow))
		return
	}
	sub, err := s.messaging.Subscribe(c.Request.Context(), principal.TenancyID, queueID, messaging.SubscribeRequest{
		ConsumerGroup: httpapi.Deref(params.ConsumerGroupId), ConsumerID: consumerID, ChannelFilter: httpapi.Deref(params.ChannelFilter)})
	if err != nil {
		apierror.Write(c, err)
		return
	}
	ss := &session{
		svc: s, sub: sub, id: randomHex(16), tenancyID: principal.TenancyID, window: window,
		autoCommit: params.AutoCommit != nil && *params.AutoCommit,
		pending:    map[string]struct{}{}, offsets: map[int32]pushedOffset{}, lastActive: time.Now(), freed: make(chan struct{}, 1),
	}
	// The request's context ends when the handler returns; the watch keeps its values (principal, trace).
	ctx := c.Request.Context()
	ss.ctx, ss.cancel = context.WithCancel(context.WithoutCancel(ctx))
	defer ss.cancel()
	maxWatches := s.cfg.MaxPerTenancy
	if s.cfg.WatchesOf != nil {
		maxWatches = s.cfg.WatchesOf(principal.TenancyID)
	}
	result, err := s.consumers.OpenWatch(ctx, ss.registration(), int32(messaging.WatchLiveness/time.Second), maxWatches)
	switch {
	case err != nil:
		apierror.Write(c, err)
		return
	case result == persistence.WatchConsumerBusy:
		apierror.Write(c, fault.TooManyRequests(int(s.cfg.Heartbeat/time.Second)+1,
			"X-Ferry-Consumer-Id: consumer %q already has an open watch on this consumer group", consumerID))
		return
	case result == persistence.WatchTenancyFull:
		apierror.Write(c, fault.TooManyRequests(10, "the tenancy has %d open watches, the most allowed (quota \"watches\")", maxWatches))
		return
	}
	if !s.add(ss) {
		ss.leave()
		apierror.Write(c, fault.Unavailable(1, "the server is shutting down"))
		return
	}
	defer s.remove(ss)
	conn, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{
		// Callers authenticate with a bearer token, never a cookie: a page of another origin gains nothing.
		InsecureSkipVerify: true,
	})
	if err != nil {
		ss.leave()
		return // Accept answered the request
	}
	conn.SetReadLimit(maxFrame)
	ss.run(conn)
}

func (s *Service) add(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sessions[ss.id] = ss
	s.wg.Add(1)
	return true
}

func (s *Service) remove(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss.id)
	s.mu.Unlock()
	s.wg.Done()
}

// heartbeat renews this node's registrations and stops the watches that lost theirs (the consumer was removed
// with DeleteConsumer, or it was declared dead and opened a watch elsewhere).
func (s *Service) heartbeat(ctx context.Context) {
	t := time.NewTicker(s.cfg.Heartbeat)
	defer t.Stop()
	coalesce := time.NewTimer(coalesceKicks)
	coalesce.Stop()
	defer coalesce.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
			// Coalesce a burst of changes into one heartbeat; Stop does not wait for the burst to end.
			coalesce.Reset(coalesceKicks)
			select {
			case <-ctx.Done():
				return
			case <-coalesce.C:
			}
		}
		s.mu.Lock()
		list := make([]*session, 0, len(s.sessions))
		for _, ss := range s.sessions {
			list = append(list, ss)
		}
		s.mu.Unlock()
		if len(list) == 0 {
			continue
		}
		regs := make([]persistence.Watch, len(list))
		for i, ss := range list {
			regs[i] = ss.registration()
		}
		// A heartbeat under way runs to its end (up to its timeout) even when Stop comes.
		beatCtx, cancel := context.WithTimeout(context.Background(), s.cfg.Heartbeat)
		owned, err := s.consumers.Heartbeat(beatCtx, regs)
		cancel()
		if err != nil {
			s.logger.Warn("heartbeat of watches", "error", err)
			continue
		}
		for _, ss := range list {
			if !owned[ss.id] {
				ss.end(websocket.StatusPolicyViolation, "the consumer was removed from its consumer group")
			}
		}
	}
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
