package messaging

import (
	"context"
	"hash/fnv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/metering"
)

// Queue-based load balancing (docs/partitions.md): a partitioned queue appends every message to a partition, and
// a PARTITION consumer group reads each partition with exactly one live consumer, by offset, committing offsets
// instead of acknowledging messages. Who owns which partition is decided in PostgreSQL (persistence.Partitions),
// so every node agrees; this file validates, long-polls and wakes.

// PartitionRecheck bounds how long a waiting partition read goes without looking at the database: it notices a
// consumer whose lease lapsed, or a handover whose grace is over, within it.
const PartitionRecheck = time.Second

// PartitionRead is a GetPartitionMessages call.
type PartitionRead struct {
	ConsumerGroup  string // OCID or displayName of a PARTITION group
	ConsumerID     string
	Limit          int    // 1..openapi.MaxPartitionReadLimit
	TimeoutSeconds *int32 // nil = the queue's timeoutInSeconds
}

// PartitionOffset is one offset to commit.
type PartitionOffset struct {
	Partition  int32
	Offset     int64
	Generation int64
}

// partitionOf is the partition of a message: hash(key) mod n, where the key is partitionKey, else the message
// group, else the channel; without any, the partitions take turns (rr).
func partitionOf(e PutEntry, n int32, rr func() uint64) int32 {
	key := e.PartitionKey
	if key == "" {
		key = e.MessageGroupID
	}
	if key == "" {
		key = e.ChannelID
	}
	if key == "" {
		return int32(rr() % uint64(n))
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int32(h.Sum32() % uint32(n))
}

// putPartitioned stores a batch of a partitioned queue: every message goes to its partition (PARTITION groups read
// it there), and to the MESSAGE groups whose filter takes it, as a copy of its own. Nothing is discarded: the
// partitions keep every message until its retention ends.
func (s *Service) putPartitioned(ctx context.Context, q persistence.Queue, groups []group, entries []PutEntry) ([]persistence.PutResult, error) {
	requestTrace := traceparentOf(ctx)
	msgs := make([]persistence.PartitionedMessage, len(entries))
	bytesByChannel := map[string]int64{}
	var batchBytes, logBytes int64
	for i, e := range entries {
		if k := e.PartitionKey; k != "" && (!utf8.ValidString(k) || utf8.RuneCountInString(k) > openapi.MaxPartitionKeyLength) {
			return nil, fault.InvalidParameter("messages[%d].metadata.partitionKey: 1 to %d characters of UTF-8", i, openapi.MaxPartitionKeyLength)
		}
		m, err := encode(i, e, requestTrace, maxContentLength(q))
		if err != nil {
			return nil, err
		}
		m.Groups = fanout(groups, filterInput(e))
		msgs[i] = persistence.PartitionedMessage{NewMessage: m, Partition: partitionOf(e, q.PartitionCount, func() uint64 { return s.roundRobin.Add(1) })}
		bytesByChannel[m.ChannelID] += int64(m.SizeBytes) * int64(len(m.Groups))
		batchBytes += int64(m.SizeBytes) * int64(len(m.Groups))
		logBytes += int64(m.SizeBytes)
	}
	if batchBytes > 0 {
		if err := s.checkSize(q.TenancyID, q, batchBytes, bytesByChannel); err != nil {
			return nil, err
		}
	}
	stored, err := s.messages.PutPartitioned(ctx, q.ID, q.RetentionSeconds, msgs)
	if err != nil {
		if ctx.Err() != nil {
			s.announcePartitioned(q.ID)
		}
		return nil, err
	}
	results := make([]persistence.PutResult, len(stored))
	copies := map[int32]int64{}
	channels := map[string]bool{}
	var maxID int64
	for i, r := range stored {
		results[i] = r.PutResult
		maxID = max(maxID, r.ID)
		for _, g := range msgs[i].Groups {
			copies[g]++
			channels[msgs[i].ChannelID] = true
		}
	}
	for g, n := range copies {
		s.meter.CountGroup(q.TenancyID, q.ID, g, metering.Published, n)
	}
	if len(copies) > 0 {
		s.sizes.add(q.ID, bytesByChannel, maxID)
		for _, g := range groups {
			s.channels.published(channelKey{queueID: q.ID, groupNo: g.No}, channels)
		}
	}
	s.announcePartitioned(q.ID)
	s.meter.Count(q.TenancyID, q.ID, persistence.WholeQueue, metering.Published, int64(len(stored)))
	s.meter.Count(q.TenancyID, q.ID, persistence.WholeQueue, metering.PublishedBytes, logBytes)
	return results, nil
}

// announcePartitioned wakes the readers of a queue's partitions and message groups, here and on the other nodes.
func (s *Service) announcePartitioned(queueID string) {
	s.readers.wake(queueID)
	s.waiters.wakeQueue(queueID)
	s.notifier.mark(persistence.MessagesAvailable, queueID)
}

// partitionGroup checks the queue and resolves a PARTITION group.
func (s *Service) partitionGroup(ctx context.Context, tenancyID, queueID, groupRef string) (persistence.Queue, group, error) {
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return q, group{}, err
	}
	if groupRef == "" {
		return q, group{}, fault.MissingParameter("consumerGroupId: name the consumer group (its loadBalancing must be PARTITION)")
	}
	g, err := s.groups.resolve(ctx, q, groupRef)
	if err != nil {
		return q, g, err
	}
	if !g.Partitioned {
		return q, g, fault.InvalidParameter("consumerGroupId: %q balances message by message (loadBalancing MESSAGE): read it with GetMessages", g.DisplayName)
	}
	return q, g, nil
}

func requireConsumer(id string) error {
	if id == "" {
		return fault.MissingParameter("X-Ferry-Consumer-Id: name the consumer (a partition belongs to one consumer)")
	}
	return ValidConsumerID(id)
}

// ReadPartitions registers (renews) the caller as a consumer of a PARTITION group, rebalances the group when its
// consumers changed, and returns the caller's partitions with up to Limit messages after their committed
// offsets. With none, it waits up to the timeout (holding no connection) for a put, a change of consumers, or
// its recheck; it answers early when its partitions (or their generations) change.
func (s *Service) ReadPartitions(ctx context.Context, tenancyID, queueID string, req PartitionRead) (persistence.Fetched, error) {
	q, g, err := s.partitionGroup(ctx, tenancyID, queueID, req.ConsumerGroup)
	if err != nil {
		return persistence.Fetched{}, err
	}
	if err := requireConsumer(req.ConsumerID); err != nil {
		return persistence.Fetched{}, err
	}
	if req.Limit == 0 {
		req.Limit = 100
	}
	if req.Limit < 1 || req.Limit > openapi.MaxPartitionReadLimit {
		return persistence.Fetched{}, fault.InvalidParameter("limit: must be 1 to %d", openapi.MaxPartitionReadLimit)
	}
	timeout := q.TimeoutSeconds
	if req.TimeoutSeconds != nil {
		timeout = *req.TimeoutSeconds
	}
	deadline := time.Now().Add(time.Duration(timeout) * time.Second)
	w := s.readers.add(queueID)
	defer s.readers.remove(queueID, w)
	fetch := fetchRequest(q, g.No, req.ConsumerID, req.Limit)
	var first []persistence.PartitionState
	for attempt := 0; ; attempt++ {
		// Finished even when the caller goes away: a rebalance half done would only be redone, but the commit of
		// the transaction must not race the caller's next call.
		got, err := s.store.Partitions.Fetch(context.WithoutCancel(ctx), fetch)
		if err != nil {
			return got, err
		}
		if got.Rebalanced {
			s.partitionsChanged(queueID)
		}
		if attempt == 0 {
			first = got.Owned
		}
		remaining := time.Until(deadline)
		if len(got.Records) > 0 || remaining <= 0 || ctx.Err() != nil || !persistence.SameAssignment(first, got.Owned) {
			s.meter.Count(tenancyID, queueID, g.No, metering.Delivered, int64(len(got.Records)))
			return got, ctx.Err()
		}
		select {
		case <-w.wake:
		case <-time.After(min(remaining, jitter(PartitionRecheck))):
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
}

// fetchRequest is a consumer's read of its partitions of a PARTITION group of q (a long poll's, or a watch's poll).
func fetchRequest(q persistence.Queue, groupNo int32, consumerID string, limit int) persistence.FetchRequest {
	return persistence.FetchRequest{QueueID: q.ID, TenancyID: q.TenancyID, GroupNo: groupNo, ConsumerID: consumerID,
		PartitionCount: q.PartitionCount, LeaseSeconds: q.ConsumerLeaseSeconds,
		HandoverGrace: time.Duration(q.ConsumerLeaseSeconds) * time.Second, Limit: limit}
}

// partitionsChanged tells the readers of the queue's partitions, here and on the other nodes, that the assignment
// changed: an owner asked to hand a partition over releases it at its next look, a new owner starts reading.
func (s *Service) partitionsChanged(queueID string) {
	s.readers.wake(queueID)
	s.notifier.mark(persistence.ConsumersChanged, queueID)
}

// CommitOffsets commits the offsets the caller processed (all or none): 409 (StaleGenerationError) for a
// partition it no longer owns at the given generation.
func (s *Service) CommitOffsets(ctx context.Context, tenancyID, queueID, groupRef, consumerID string, offsets []PartitionOffset) error {
	q, g, err := s.partitionGroup(ctx, tenancyID, queueID, groupRef)
	if err != nil {
		return err
	}
	if err := requireConsumer(consumerID); err != nil {
		return err
	}
	if len(offsets) == 0 || len(offsets) > openapi.MaxPartitions {
		return fault.InvalidParameter("offsets: 1 to %d offsets", openapi.MaxPartitions)
	}
	parts, offs, gens := make([]int32, len(offsets)), make([]int64, len(offsets)), make([]int64, len(offsets))
	seen := map[int32]bool{}
	for i, o := range offsets {
		if o.Partition < 0 || o.Partition >= q.PartitionCount {
			return fault.InvalidParameter("offsets[%d].partition: the queue has partitions 0 to %d", i, q.PartitionCount-1)
		}
		if seen[o.Partition] {
			return fault.InvalidParameter("offsets[%d].partition: partition %d is listed twice", i, o.Partition)
		}
		if o.Offset < -1 {
			return fault.InvalidParameter("offsets[%d].offset: must be at least -1", i)
		}
		seen[o.Partition] = true
		parts[i], offs[i], gens[i] = o.Partition, o.Offset, o.Generation
	}
	return s.store.Partitions.Commit(context.WithoutCancel(ctx), queueID, g.No, persistence.CommitRequest{ConsumerID: consumerID,
		LeaseSeconds: q.ConsumerLeaseSeconds, Partitions: parts, Offsets: offs, Generations: gens})
}

// SeekPartitions moves a PARTITION group's committed offsets (partitions nil = all) so that the next read starts at
// offset, or at the first message published at or after at; the moved partitions get a new generation.
func (s *Service) SeekPartitions(ctx context.Context, tenancyID, queueID, groupRef string, partitions []int32, offset *int64,
	at *time.Time) ([]persistence.PartitionState, error) {
	q, g, err := s.partitionGroup(ctx, tenancyID, queueID, groupRef)
	if err != nil {
		return nil, err
	}
	if (offset == nil) == (at == nil) {
		return nil, fault.InvalidParameter("offset, time: give exactly one")
	}
	if offset != nil && *offset < 0 {
		return nil, fault.InvalidParameter("offset: must be at least 0")
	}
	for i, p := range partitions {
		if p < 0 || p >= q.PartitionCount {
			return nil, fault.InvalidParameter("partitions[%d]: the queue has partitions 0 to %d", i, q.PartitionCount-1)
		}
	}
	var when time.Time
	if at != nil {
		when = *at
	}
	states, err := s.store.Partitions.Seek(context.WithoutCancel(ctx), queueID, g.No, q.PartitionCount, partitions, offset, when)
	if err == nil {
		s.partitionsChanged(queueID)
	}
	return states, err
}

// PartitionStates returns every partition of each PARTITION group of the queue (by group OCID); nil when the
// queue is not partitioned.
func (s *Service) PartitionStates(ctx context.Context, tenancyID, queueID string) (map[string][]persistence.PartitionState, error) {
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil || q.PartitionCount == 0 {
		return nil, err
	}
	groups, err := s.groups.of(ctx, q)
	if err != nil {
		return nil, err
	}
	out := map[string][]persistence.PartitionState{}
	for _, g := range groups {
		if !g.Partitioned {
			continue
		}
		states, err := s.store.Partitions.States(ctx, queueID, g.No, q.PartitionCount)
		if err != nil {
			return nil, err
		}
		out[g.ID] = states
	}
	return out, nil
}

// readerSet holds this node's waiting partition reads per queue. Unlike GetMessages' waiters, every reader of a
// queue wakes on a change: each owns other partitions, and a change of consumers concerns them all.
type readerSet struct {
	mu      sync.Mutex
	byQueue map[string]map[*partitionReader]struct{}
}

type partitionReader struct{ wake chan struct{} }

func newReaderSet() *readerSet {
	return &readerSet{byQueue: map[string]map[*partitionReader]struct{}{}}
}

func (rs *readerSet) add(queueID string) *partitionReader {
	r := &partitionReader{wake: make(chan struct{}, 1)}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	set := rs.byQueue[queueID]
	if set == nil {
		set = map[*partitionReader]struct{}{}
		rs.byQueue[queueID] = set
	}
	set[r] = struct{}{}
	return r
}

func (rs *readerSet) remove(queueID string, r *partitionReader) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if set := rs.byQueue[queueID]; set != nil {
		delete(set, r)
		if len(set) == 0 {
			delete(rs.byQueue, queueID)
		}
	}
}

// wake wakes every reader of the queue ("" = of every queue).
func (rs *readerSet) wake(queueID string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for q, set := range rs.byQueue {
		if queueID != "" && q != queueID {
			continue
		}
		for r := range set {
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
	}
}
