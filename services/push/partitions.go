package push

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/messaging"
	"github.com/ferry-mq/ferry/services/wire"
)

// Watches of PARTITION groups (docs/partitions.md, "Watches"): the watch is a member of the group like a
// long-poll consumer, and the pusher is the long poll's loop. A messages frame is the GetPartitionMessages body
// ({"generation","partitions","messages"}: each message with its partition, offset and generation); a frame
// with no messages tells the consumer its partitions changed. The consumer commits offsets,
// {"commit":[{"partition","offset","generation"}]}, answered by a reply frame (409 StaleGeneration as its error
// when it no longer owns a partition at that generation).
//
// Flow control: each poll reads up to window messages after the committed offsets, as a long poll does, and the
// watch pushes those it has not pushed yet (it remembers, per partition and generation, the last offset pushed);
// when everything read is pushed, it waits for a commit, a put or a change of consumers. So at most about a
// window of messages is pushed and not committed. Each poll is the consumer's call: a partition that is to move
// to another consumer moves at the watch's next poll, and the consumer's commits of what it got of it then answer
// StaleGeneration (its new owner reads it from the committed offset: at-least-once, as for long polls).

// offsetFrame is one offset of a commit frame.
type offsetFrame struct {
	Partition  int32 `json:"partition"`
	Offset     int64 `json:"offset"`
	Generation int64 `json:"generation"`
}

// partitionClientFrame is what a consumer of a PARTITION group sends.
type partitionClientFrame struct {
	ID       string          `json:"id,omitempty"`
	Commit   []offsetFrame   `json:"commit,omitempty"`
	Negative json.RawMessage `json:"negative,omitempty"`
}

// pushedOffset is the last offset pushed of a partition, at the generation it was read at.
type pushedOffset struct{ offset, generation int64 }

// parsePartitionFrame reads a frame of the PARTITION protocol into the session's frame.
func parsePartitionFrame(data []byte) (clientFrame, error) {
	var p partitionClientFrame
	if err := json.Unmarshal(data, &p); err != nil {
		return clientFrame{}, err
	}
	f := clientFrame{ID: p.ID, offsets: p.Commit, partitionFrame: true}
	if p.Negative != nil {
		f.Negative = []string{}
	}
	return f, nil
}

// pushPartitions polls the consumer's partitions and pushes what it was not pushed yet, until ctx ends.
func (ss *session) pushPartitions(ctx context.Context) {
	var known []persistence.PartitionState
	for ctx.Err() == nil {
		got, err := ss.sub.PollPartitions(ctx, ss.id, ss.window, known)
		if err != nil {
			if !ss.pollFailed(ctx, err) {
				return
			}
			continue
		}
		changed := !persistence.SameAssignment(known, got.Owned)
		known = got.Owned
		fresh := ss.unpushed(got)
		if !changed && len(fresh) == 0 {
			// Everything read is pushed and not committed yet: wait for a commit, a put or a rebalance.
			if !ss.sub.AwaitPartitions(ctx, ss.freed) {
				return
			}
			continue
		}
		got.Records = fresh
		ss.sub.CountDelivered(len(fresh))
		if err := ss.writeRaw(wire.AppendPartitionMessages(nil, got)); err != nil {
			ss.end(websocket.StatusPolicyViolation, "the consumer did not read in time")
			return // nothing was committed: the partitions' next owner reads these messages again
		}
		if ss.autoCommit && len(fresh) > 0 {
			if err := ss.sub.CommitOffsets(context.WithoutCancel(ctx), lastOffsets(fresh)); err != nil {
				ss.svc.logger.Warn("watch auto-commit of offsets", "consumer", ss.sub.ConsumerID(), "error", err)
			}
		}
	}
}

// unpushed forgets the pushed offsets of partitions the consumer no longer owns at the generation they were
// pushed at, and returns the records it was not pushed yet, noting them. A pushed offset is kept after a commit
// (a poll that started before the commit returns messages the commit covered: they are not pushed again), and
// forgotten when the partition's generation changes (moved, or sought: then it is pushed again from the commit).
func (ss *session) unpushed(got persistence.Fetched) []persistence.PartitionRecord {
	gens := map[int32]int64{}
	for _, p := range got.Owned {
		gens[p.Partition] = p.Generation
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for p, o := range ss.offsets {
		if g, ok := gens[p]; !ok || g != o.generation {
			delete(ss.offsets, p)
		}
	}
	fresh := got.Records[:0:0]
	for _, r := range got.Records {
		if o, ok := ss.offsets[r.Partition]; ok && o.generation == r.Generation && r.Offset <= o.offset {
			continue
		}
		fresh = append(fresh, r)
		ss.offsets[r.Partition] = pushedOffset{offset: r.Offset, generation: r.Generation}
	}
	ss.delivered += int64(len(fresh))
	if len(fresh) > 0 {
		ss.lastActive = time.Now()
	}
	return fresh
}

// pollFailed handles a failed poll: false when the watch must stop.
func (ss *session) pollFailed(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, messaging.ErrGone) {
		ss.end(websocket.StatusGoingAway, "the queue or the consumer group was deleted")
		return false
	}
	ss.svc.logger.Warn("watch of partitions", "consumer", ss.sub.ConsumerID(), "error", err)
	select { // the database is unwell: try again shortly
	case <-time.After(time.Second):
		return true
	case <-ctx.Done():
		return false
	}
}

// lastOffsets is, per partition, the last offset of the records, with its generation.
func lastOffsets(records []persistence.PartitionRecord) []messaging.PartitionOffset {
	var out []messaging.PartitionOffset
	at := map[int32]int{}
	for _, r := range records {
		i, ok := at[r.Partition]
		if !ok {
			i = len(out)
			at[r.Partition] = i
			out = append(out, messaging.PartitionOffset{Partition: r.Partition})
		}
		out[i].Offset, out[i].Generation = r.Offset, r.Generation
	}
	return out
}

// handlePartitions applies a commit frame of a PARTITION group's consumer and answers it.
func (ss *session) handlePartitions(f clientFrame) {
	var frameErr error
	switch {
	case f.Negative != nil:
		frameErr = fault.InvalidParameter("frame: a PARTITION consumer group takes no negative acknowledgements: commit offsets, and close the watch to leave the group")
	case len(f.offsets) == 0:
		frameErr = fault.InvalidParameter("frame: send {\"commit\":[{\"partition\":p,\"offset\":o,\"generation\":g}]}")
	case len(f.offsets) > openapi.MaxPartitions:
		frameErr = fault.InvalidParameter("frame: at most %d offsets", openapi.MaxPartitions)
	}
	if frameErr == nil {
		offsets := make([]messaging.PartitionOffset, len(f.offsets))
		for i, o := range f.offsets {
			offsets[i] = messaging.PartitionOffset{Partition: o.Partition, Offset: o.Offset, Generation: o.Generation}
		}
		frameErr = ss.sub.CommitOffsets(ss.ctx, offsets)
		if frameErr == nil { // the window moved: the pusher may read further
			select {
			case ss.freed <- struct{}{}:
			default:
			}
		}
	}
	r := reply{ID: f.ID, Errors: []entryError{}}
	if frameErr != nil {
		r.Error = partitionErrorBody(frameErr)
	}
	_ = ss.write(replyFrame{Reply: r})
}

// partitionErrorBody is a frame's error: a fenced commit is StaleGeneration, as the commit endpoint's 409.
func partitionErrorBody(err error) *errorBody {
	var stale *persistence.StaleGenerationError
	if errors.As(err, &stale) {
		return &errorBody{Code: "StaleGeneration", Message: stale.Error()}
	}
	return bodyOf(err)
}
