package persistence

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Counting (sql/messages/stats.sql).
var (
	messagesStats         = stmt("messages.stats")
	messagesStatsByGroup  = stmt("messages.stats_by_group")
	messagesChannels      = stmt("messages.channels")
	messagesSizeByChannel = stmt("messages.size_by_channel")
	messagesAddDiscarded  = stmt("messages.add_discarded")
	messagesDiscarded     = stmt("messages.discarded")
)

// Stats counts a group's messages (channelID "" = all channels): the queue's and its DLQ's.
func (r *Messages) Stats(ctx context.Context, queueID string, groupNo int32, channelID string) (queue, dlq Stats, err error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return queue, dlq, err
	}
	rows, err := messagesStats.query(ctx, r.pool, arg{"queue_no", no}, arg{"group_no", groupNo}, arg{"channel_id", channelID})
	if err != nil {
		return queue, dlq, interpretError("queue stats", err)
	}
	var isDLQ bool
	var s Stats
	_, err = pgx.ForEachRow(rows, []any{&isDLQ, &s.Visible, &s.InFlight, &s.Delayed, &s.SizeBytes}, func() error {
		if isDLQ {
			dlq = s
		} else {
			queue = s
		}
		return nil
	})
	return queue, dlq, interpretError("queue stats", err)
}

// GroupStats are one consumer group's counts in the queue and in its DLQ.
type GroupStats struct {
	Queue, DLQ Stats
}

// StatsByGroup counts the messages of the given groups of a queue (nil = every group; optionally of one channel)
// in one statement, with the same definitions as Stats. Groups without messages are absent from the map.
func (r *Messages) StatsByGroup(ctx context.Context, queueID string, groupNos []int32, channelID string) (map[int32]GroupStats, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	rows, err := messagesStatsByGroup.query(ctx, r.pool, arg{"queue_no", no}, arg{"group_nos", groupNos}, arg{"channel_id", channelID})
	if err != nil {
		return nil, interpretError("counting consumer group messages", err)
	}
	out := map[int32]GroupStats{}
	var groupNo int32
	var dlq bool
	var s Stats
	_, err = pgx.ForEachRow(rows, []any{&groupNo, &dlq, &s.Visible, &s.InFlight, &s.Delayed, &s.SizeBytes, &s.OldestVisibleAge}, func() error {
		g := out[groupNo]
		if dlq {
			g.DLQ = s
		} else {
			g.Queue = s
		}
		out[groupNo] = g
		return nil
	})
	return out, interpretError("counting consumer group messages", err)
}

// Channels lists up to limit distinct channel ids after from (or from itself too, when inclusive) that hold
// messages of the group, in index order.
func (r *Messages) Channels(ctx context.Context, queueID string, groupNo int32, dlq bool, from string, inclusive bool, limit int) ([]string, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	rows, err := messagesChannels.query(ctx, r.pool, arg{"queue_no", no}, arg{"group_no", groupNo}, arg{"dlq", dlq},
		arg{"from_channel", from}, arg{"inclusive", inclusive}, arg{"limit", limit})
	if err != nil {
		return nil, interpretError("listing channels", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, interpretError("listing channels", err)
}

// SizeByChannel sums the stored bytes of a queue (every group and the DLQ) per channel, and returns the highest
// message id it counted: a put whose messages all have higher ids is not in the sums (a batch commits whole, so
// had it been seen, its highest id would have been too).
func (r *Messages) SizeByChannel(ctx context.Context, queueID string) (sizes map[string]int64, maxID int64, _ error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, 0, err
	}
	rows, err := messagesSizeByChannel.query(ctx, r.pool, arg{"queue_no", no})
	if err != nil {
		return nil, 0, interpretError("queue size", err)
	}
	out := map[string]int64{}
	var ch string
	var n, id int64
	_, err = pgx.ForEachRow(rows, []any{&ch, &n, &id}, func() error {
		out[ch] = n
		maxID = max(maxID, id)
		return nil
	})
	return out, maxID, interpretError("queue size", err)
}

// AddDiscarded counts messages that no consumer group took.
func (r *Messages) AddDiscarded(ctx context.Context, queueID string, n int64) error {
	_, err := messagesAddDiscarded.exec(ctx, r.pool, arg{"queue_id", queueID}, arg{"discarded", n})
	return interpretError("counting discarded messages", err)
}

// Discarded is how many of the queue's messages no consumer group took.
func (r *Messages) Discarded(ctx context.Context, queueID string) (int64, error) {
	var n int64
	err := messagesDiscarded.queryRow(ctx, r.pool, arg{"queue_id", queueID}).Scan(&n)
	return n, interpretError("reading discarded messages", err)
}
