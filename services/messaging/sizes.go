package messaging

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/persistence"
)

// sizeCache keeps each queue's stored bytes (total and per channel) for the size limits. It is refreshed in the
// background at most every refresh interval, so a put never waits for a scan of a large queue; the limits are
// therefore enforced within a few seconds, not to the byte.
type sizeCache struct {
	scan    func(ctx context.Context, queueID string) (byChannel map[string]int64, maxID int64, err error)
	refresh time.Duration
	logger  *slog.Logger
	mu      sync.Mutex
	byQueue map[string]*queueSize
	// byTenancy sums the known sizes of each tenancy's queues, for its stored-bytes quota: the queues this node
	// published to since it started (a scan of every queue of a tenancy at its first put would cost a tenancy of
	// 10,000 idle queues 10,000 statements).
	byTenancy map[string]int64
}

type queueSize struct {
	tenancyID string
	total     int64
	byChannel map[string]int64
	fetched   time.Time
	loading   bool
	stale     bool          // invalidated while a scan was running: that scan's result is already out of date
	cost      time.Duration // the last scan's duration: big queues are rescanned less often
	// scanMaxID is the highest message id the last scan counted: a put whose ids are all higher is not in its
	// sums. One with lower ids may be (its commit raced the scan) and is not added again: the count errs low, for
	// a refresh, rather than refuse puts for bytes counted twice.
	scanMaxID int64
	pending   []addedBytes // puts added while a scan runs, to add again on top of its result when it missed them
}

type addedBytes struct {
	byChannel map[string]int64
	maxID     int64
}

// pendingMax bounds the puts remembered during one scan; beyond it they are left to the next scan.
const pendingMax = 4096

func newSizeCache(m *persistence.Messages, refresh time.Duration, logger *slog.Logger) *sizeCache {
	return &sizeCache{scan: m.SizeByChannel, refresh: refresh, logger: logger, byQueue: map[string]*queueSize{},
		byTenancy: map[string]int64{}}
}

// tenancyTotal is the stored bytes of the tenancy's queues known to this node.
func (c *sizeCache) tenancyTotal(tenancyID string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byTenancy[tenancyID]
}

// entryLocked returns the queue's entry, making it when there is none.
func (c *sizeCache) entryLocked(queueID, tenancyID string) *queueSize {
	e := c.byQueue[queueID]
	if e == nil {
		e = &queueSize{tenancyID: tenancyID}
		c.byQueue[queueID] = e
	}
	return e
}

// get returns the last known size of the queue and of each of the given channels (zero before the first scan
// finished), and starts a refresh when stale. The channel sizes are copied: the cache's own map changes under
// concurrent puts.
func (c *sizeCache) get(queueID, tenancyID string, channels map[string]int64) (total int64, byChannel map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entryLocked(queueID, tenancyID)
	// Rescan after refresh, or after 20× the last scan's duration: at most ~5 % of a core on one queue.
	if !e.loading && time.Since(e.fetched) > max(c.refresh, 20*e.cost) {
		e.loading = true
		go c.load(queueID)
	}
	byChannel = make(map[string]int64, len(channels))
	for ch := range channels {
		byChannel[ch] = e.byChannel[ch]
	}
	return e.total, byChannel
}

// add counts a put's bytes (maxID: the highest id it stored) until the next scan sees them. byChannel is kept:
// the caller must not change it.
func (c *sizeCache) add(queueID string, byChannel map[string]int64, maxID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byQueue[queueID]
	if e == nil {
		return
	}
	if e.loading {
		if len(e.pending) < pendingMax {
			e.pending = append(e.pending, addedBytes{byChannel, maxID})
		}
	} else if maxID <= e.scanMaxID {
		return // the last scan may have counted it
	}
	c.addLocked(e, byChannel)
}

// addLocked adds bytes to a queue's sizes and to its tenancy's.
func (c *sizeCache) addLocked(e *queueSize, byChannel map[string]int64) {
	before := e.total
	e.addLocked(byChannel)
	if e.tenancyID != "" {
		c.byTenancy[e.tenancyID] += e.total - before
	}
}

func (e *queueSize) addLocked(byChannel map[string]int64) {
	if e.byChannel == nil {
		e.byChannel = map[string]int64{}
	}
	for ch, n := range byChannel {
		e.total += n
		e.byChannel[ch] += n
	}
}

// invalidate makes the next get rescan the queue (after a purge removed messages).
func (c *sizeCache) invalidate(queueID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byQueue[queueID]; e != nil {
		e.fetched = time.Time{}
		e.stale = e.loading
	}
}

func (c *sizeCache) load(queueID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	byChannel, maxID, err := c.scan(ctx, queueID)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byQueue[queueID]
	e.loading = false
	pending := e.pending
	e.pending = nil
	e.fetched = time.Now()
	if e.stale {
		e.fetched, e.stale = time.Time{}, false
	}
	if err != nil {
		c.logger.Warn("measuring queue size", "queue", queueID, "error", err)
		return
	}
	e.cost = time.Since(start)
	before := e.total
	e.total = 0
	for _, n := range byChannel {
		e.total += n
	}
	e.byChannel, e.scanMaxID = byChannel, maxID
	for _, p := range pending { // counted already when added; again only where the scan missed them
		if p.maxID > maxID {
			e.addLocked(p.byChannel)
		}
	}
	if e.tenancyID != "" {
		c.byTenancy[e.tenancyID] += e.total - before
	}
}
