package messaging

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/filter"
)

// group is a consumer group as the data plane uses it: its number in the messages table and its compiled filter.
type group struct {
	No            int32
	ID            string
	DisplayName   string
	Enabled       bool
	Filter        *filter.Filter // nil matches every message
	MaxDeliveries *int32         // nil = the queue's deadLetterQueueDeliveryCount
	// Partitioned: the group reads the queue's partitions by offset (loadBalancing PARTITION): it gets no copy of
	// a message, and GetMessages and watches refuse it.
	Partitioned bool
}

// notPartitioned refuses a message-based operation on a PARTITION group.
func (g group) notPartitioned() error {
	if g.Partitioned {
		return fault.InvalidParameter("consumerGroupId: %q balances by partition: read it with GET /queues/{queueId}/partitions/messages", g.DisplayName)
	}
	return nil
}

// maxDeliveries is the group's dead-letter count: its own, else the queue's (0 = no DLQ).
func (g group) maxDeliveries(q persistence.Queue) int32 {
	if g.MaxDeliveries != nil {
		return *g.MaxDeliveries
	}
	return q.DeadLetterQueueDeliveryCount
}

// validChannelFilter checks a channelFilter: an exact channel id, or a prefix followed by one trailing '*'.
func validChannelFilter(f string) error {
	if f != "" && strings.Contains(strings.TrimSuffix(f, "*"), "*") {
		return fault.InvalidParameter("channelFilter: a channel id, or a prefix followed by a single trailing '*'")
	}
	return nil
}

// groupCache keeps each queue's consumer groups with their filters compiled once. A change to a queue's groups
// on any node NOTIFYs ferry_config, which drops the entry on every node; the TTL is a safety net.
type groupCache struct {
	groups *persistence.ConsumerGroups
	mu     sync.Mutex
	byQ    map[string]cachedGroups
	// gen counts invalidations: a load that started before one must not store what it read, or a change could be
	// hidden until the TTL by a put that was reading the old groups when the change was announced.
	gen uint64
}

const groupCacheTTL = 5 * time.Second

type cachedGroups struct {
	list    []group
	fetched time.Time
}

func newGroupCache(g *persistence.ConsumerGroups) *groupCache {
	return &groupCache{groups: g, byQ: map[string]cachedGroups{}}
}

// primaryOnly is the behaviour of a queue without the CONSUMER_GROUPS capability.
func primaryOnly(q persistence.Queue) []group {
	return []group{{No: persistence.PrimaryGroupNo, ID: q.ID, DisplayName: persistence.PrimaryGroupName, Enabled: true}}
}

// of returns the queue's live groups.
func (c *groupCache) of(ctx context.Context, q persistence.Queue) ([]group, error) {
	if !q.ConsumerGroupsEnabled {
		return primaryOnly(q), nil
	}
	c.mu.Lock()
	e, ok := c.byQ[q.ID]
	gen := c.gen
	c.mu.Unlock()
	if ok && time.Since(e.fetched) < groupCacheTTL {
		return e.list, nil
	}
	rows, err := c.groups.OfQueue(ctx, q.ID)
	if err != nil {
		return nil, err
	}
	list := make([]group, 0, len(rows))
	for _, r := range rows {
		g := group{No: r.GroupNo, ID: r.ID, DisplayName: r.DisplayName, Enabled: r.IsEnabled, MaxDeliveries: r.DeadLetterQueueDeliveryCount,
			Partitioned: r.IsPartitioned()}
		if r.Filter != "" {
			f, err := filter.Compile(r.Filter)
			if err != nil {
				// Filters are validated when set; a stored one that no longer compiles matches nothing rather
				// than everything.
				g.Enabled = false
			}
			g.Filter = f
		}
		list = append(list, g)
	}
	c.mu.Lock()
	if c.gen == gen {
		if len(c.byQ) > 100000 {
			clear(c.byQ)
		}
		c.byQ[q.ID] = cachedGroups{list: list, fetched: time.Now()}
	}
	c.mu.Unlock()
	return list, nil
}

// forget drops a queue's entry (its groups changed).
func (c *groupCache) forget(queueID string) {
	c.mu.Lock()
	delete(c.byQ, queueID)
	c.gen++
	c.mu.Unlock()
}

// clear drops every entry.
func (c *groupCache) clear() {
	c.mu.Lock()
	clear(c.byQ)
	c.gen++
	c.mu.Unlock()
}

// resolve finds the group a data-plane call addresses: "" = the primary group, else its OCID or displayName.
func (c *groupCache) resolve(ctx context.Context, q persistence.Queue, ref string) (group, error) {
	list, err := c.of(ctx, q)
	if err != nil {
		return group{}, err
	}
	for _, g := range list {
		if (ref == "" && g.No == persistence.PrimaryGroupNo) || (ref != "" && (g.ID == ref || strings.EqualFold(g.DisplayName, ref))) {
			return g, nil
		}
	}
	if ref == "" {
		return group{}, fault.NotFound("consumerGroupId: the queue has no primary consumer group")
	}
	return group{}, fault.NotFound("consumerGroupId: consumer group %q does not exist or you are not authorized to access it", ref)
}

// resolveGroup checks the queue and finds the consumer group a call addresses.
func (s *Service) resolveGroup(ctx context.Context, tenancyID, queueID, groupRef string) (int32, error) {
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return 0, err
	}
	g, err := s.groups.resolve(ctx, q, groupRef)
	return g.No, err
}

// fanout returns, for a message's attributes, the enabled groups that take it.
func fanout(groups []group, attrs map[string]any) []int32 {
	var out []int32
	for _, g := range groups {
		if g.Enabled && !g.Partitioned && g.Filter.Match(attrs) {
			out = append(out, g.No)
		}
	}
	return out
}

// GroupID resolves a data-plane consumerGroupId (OCID or displayName) on a queue to the group's OCID from this node's
// caches, the same way the data plane resolves it (IAM conditions on target.consumergroup.id use it). ok is false
// when the queue is not active or has no such group.
func (s *Service) GroupID(ctx context.Context, tenancyID, queueID, ref string) (string, bool) {
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return "", false
	}
	g, err := s.groups.resolve(ctx, q, ref)
	if err != nil {
		return "", false
	}
	return g.ID, true
}

// MetricsTarget checks the queue and resolves the consumer group a metrics query addresses: "" = the queue as a
// whole (persistence.WholeQueue, and no group id).
func (s *Service) MetricsTarget(ctx context.Context, tenancyID, queueID, groupRef string) (groupNo int32, groupID string, err error) {
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return 0, "", err
	}
	if groupRef == "" {
		return persistence.WholeQueue, "", nil
	}
	g, err := s.groups.resolve(ctx, q, groupRef)
	return g.No, g.ID, err
}
