// Package messaging is the data plane's domain logic, free of any transport: publish (validation, fanout,
// deduplication, size limits, wake-ups), lease with long polling, acknowledge and extend by receipt,
// dead-lettering, redrive, purge and stats, single active consumers and the subscriptions behind watches. It talks
// to PostgreSQL only through the persistence repositories, one statement (or one short transaction) per call.
//
// By file: service.go (the Service, its configuration and the notifications it acts on), publish.go (Put),
// consume.go (Get: long polls and leases), acknowledge.go (Delete, Update), subscription.go (watches' leases),
// consumers.go (single active consumer, consumer registry), purge.go (Redrive, Purge), stats.go (Stats,
// Channels), groups.go and queues.go (the caches of a queue's settings and consumer groups), waiters.go (who
// waits for messages on this node), notifier.go (wake-ups of other nodes), channels.go (the channels a lease
// rotates through), sizes.go (queue sizes for the size limits), receipts.go (signed receipts).
package messaging

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/metering"
	"github.com/ferry-mq/ferry/services/telemetry"
)

// Defaults of the service's timing (Config).
const (
	NotifyWindowDefault = 2 * time.Millisecond
	PollIntervalDefault = time.Second
	SizeRefreshDefault  = 2 * time.Second
)

// Config tunes the service; zero values take the defaults above.
type Config struct {
	// NotifyWindow coalesces NOTIFYs: at most one statement (for all queues with new messages) per window.
	NotifyWindow time.Duration
	// PollInterval is the fallback poll of a waiting GetMessages (jittered ±30 %, at most one per queue per
	// interval per node): it finds messages whose lease expired or whose delay ended, which nobody announces.
	PollInterval time.Duration
	// SizeRefresh bounds how stale the queue size used for maxSizeInBytes and channelConsumptionLimit may be.
	SizeRefresh time.Duration
	// Uncoalesced runs every put, lease and acknowledgement as a statement of its own, instead of merging the
	// concurrent ones of a queue (persistence/coalesce.go). For measurements; FERRY_DB_COALESCE=false.
	Uncoalesced bool
	// AsyncCommit lets leases and acknowledgements commit without waiting for their WAL
	// (persistence.AsynchronousCommits): a database crash can then undo acknowledged deletes. For measuring what
	// durability costs; FERRY_DB_ASYNC_COMMIT=true.
	AsyncCommit bool
	// StoredBytesOf, when set, is a tenancy's stored-bytes quota (services/limits), checked on every put against
	// the sizes of the tenancy's queues this node published to since it started.
	StoredBytesOf func(tenancyID string) int64 `env:"-"`
}

// Service is the data plane of one node.
type Service struct {
	cfg      Config
	store    *persistence.Store
	messages *persistence.Messages
	queues   *queueCache
	groups   *groupCache
	channels *channelSet
	waiters  *waiters
	readers  *readerSet // waiting partition reads (partitions.go)
	notifier *notifier
	receipts *Receipts
	sizes    *sizeCache
	listener *persistence.Listener
	inst     *telemetry.Instruments
	meter    *metering.Meter
	logger   *slog.Logger

	configHook    atomic.Pointer[func(persistence.Notification)]
	reconnectHook atomic.Pointer[func()]
	consumersHook atomic.Pointer[func(queueID string)]
	node          string        // this node's id in its NOTIFY payloads
	roundRobin    atomic.Uint64 // the partition of the next message without a key
	metrics       serviceMetrics
}

func newNodeID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// OnConsumersChanged calls onChange when a queue's consumers changed on any node (one left or was removed): the
// push service checks at once whether its watches still own their registrations.
func (s *Service) OnConsumersChanged(onChange func(queueID string)) {
	s.consumersHook.Store(&onChange)
}

// OnConfig passes every TenancyChanged notification to onConfig, and calls onReconnect after the LISTEN
// connection was re-established (IAM reloads policies on both).
func (s *Service) OnConfig(onConfig func(persistence.Notification), onReconnect func()) {
	s.configHook.Store(&onConfig)
	s.reconnectHook.Store(&onReconnect)
}

// New builds the service. databaseURL is used for the LISTEN connection; receiptKey signs receipts.
func New(cfg Config, store *persistence.Store, databaseURL string, receiptKey []byte, inst *telemetry.Instruments,
	meter *metering.Meter, logger *slog.Logger) *Service {
	if cfg.NotifyWindow <= 0 {
		cfg.NotifyWindow = NotifyWindowDefault
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = PollIntervalDefault
	}
	if cfg.SizeRefresh <= 0 {
		cfg.SizeRefresh = SizeRefreshDefault
	}
	if logger == nil {
		logger = slog.Default()
	}
	var opts []persistence.MessagesOption
	if cfg.AsyncCommit {
		opts = append(opts, persistence.AsynchronousCommits())
	}
	messages := persistence.NewMessages(store.Pool, !cfg.Uncoalesced, opts...)
	s := &Service{
		cfg:      cfg,
		store:    store,
		messages: messages,
		queues:   newQueueCache(store.Queues),
		groups:   newGroupCache(store.ConsumerGroups),
		channels: newChannelSet(messages),
		waiters:  newWaiters(),
		readers:  newReaderSet(),
		receipts: NewReceipts(receiptKey),
		sizes:    newSizeCache(messages, cfg.SizeRefresh, logger),
		inst:     inst,
		meter:    meter,
		logger:   logger,
	}
	s.node = newNodeID()
	s.notifier = newNotifier(cfg.NotifyWindow, func(ctx context.Context, list []persistence.Notification) error {
		now := time.Now()
		for i := range list {
			list[i].Node, list[i].Sent = s.node, now
		}
		return messages.Notify(ctx, list)
	}, logger)
	s.metrics = newServiceMetrics(inst.Meter, s.waiters.count)
	s.listener = &persistence.Listener{
		URL:      databaseURL,
		OnNotify: s.onNotify,
		OnReconnect: func() {
			s.metrics.reconnected()
			// Notifications may have been missed while disconnected.
			if hook := s.reconnectHook.Load(); hook != nil {
				(*hook)()
			}
			s.groups.clear()
			s.waiters.wakeAll()
			s.readers.wake("")
		},
		Logger: logger,
	}
	return s
}

// onNotify acts on a notification from any node.
func (s *Service) onNotify(n persistence.Notification) {
	s.metrics.notified(n, n.Node == s.node)
	if n.Node == s.node {
		// This node's own announcement: its waiters, channel lists and watches were updated when it was sent
		// (re-listing channels for each would cost a query per put).
		return
	}
	switch n.Kind {
	case persistence.QueueChanged:
		s.groups.forget(n.QueueID)
		s.queues.forget(n.QueueID)
	case persistence.TenancyChanged:
		if hook := s.configHook.Load(); hook != nil {
			(*hook)(n)
		}
	case persistence.DeadLettered:
		s.waiters.wakeDLQ(n.QueueID)
	case persistence.ConsumersChanged:
		s.waiters.wakeStandby(n.QueueID)
		s.readers.wake(n.QueueID)
		if hook := s.consumersHook.Load(); hook != nil {
			(*hook)(n.QueueID)
		}
	case persistence.MessagesAvailable:
		// Another node may have published to a channel this node has not listed: its put names them.
		if n.Channels != nil {
			s.channels.publishedElsewhere(n.QueueID, n.Channels)
		} else {
			s.channels.invalidate(n.QueueID)
		}
		s.waiters.wakeQueue(n.QueueID)
		s.readers.wake(n.QueueID)
	}
}

// Start opens the LISTEN connection and starts the notifier. Safe to call twice.
func (s *Service) Start(ctx context.Context) {
	s.listener.Start(ctx)
	s.notifier.start(ctx)
}

// Ready is closed once this node receives wake-ups from other nodes.
func (s *Service) Ready() <-chan struct{} { return s.listener.Ready() }

// Stop closes the LISTEN connection and stops the notifier. Safe to call twice.
func (s *Service) Stop() {
	s.notifier.stop()
	s.listener.Stop()
}

// Messages is the repository (maintenance and purge use it).
func (s *Service) Messages() *persistence.Messages { return s.messages }

// Waiting is the number of GetMessages calls waiting on this node.
func (s *Service) Waiting() int { return s.waiters.count() }

// ForgetQueue drops cached settings and consumer groups of a queue (after a change on this node).
func (s *Service) ForgetQueue(queueID string) {
	s.queues.forget(queueID)
	s.groups.forget(queueID)
}

func newLeaseID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 1)
}

func jitter(d time.Duration) time.Duration {
	return d*7/10 + time.Duration(mrand.Int64N(int64(d)*6/10+1))
}
