package messaging

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/ferry-mq/ferry/persistence"
)

// Stats counts the group's messages (optionally of one channel) in the queue and its DLQ.
func (s *Service) Stats(ctx context.Context, tenancyID, queueID, groupRef string, channelID string) (queue, dlq persistence.Stats, err error) {
	groupNo, err := s.resolveGroup(ctx, tenancyID, queueID, groupRef)
	if err != nil {
		return queue, dlq, err
	}
	return s.messages.Stats(ctx, queueID, groupNo, channelID)
}

// GroupStats are one consumer group's statistics.
type GroupStats struct {
	ID          string
	DisplayName string
	Enabled     bool
	Queue, DLQ  persistence.Stats
}

// AllGroupStats reports every consumer group of a queue that has the capability (nil without it), and how many
// messages no group took.
func (s *Service) AllGroupStats(ctx context.Context, tenancyID, queueID, channelID string) ([]GroupStats, int64, error) {
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return nil, 0, err
	}
	discarded, err := s.messages.Discarded(ctx, queueID)
	if err != nil || !q.ConsumerGroupsEnabled {
		return nil, discarded, err
	}
	groups, err := s.groups.of(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	nos := make([]int32, len(groups))
	for i, g := range groups {
		nos[i] = g.No
	}
	counts, err := s.messages.StatsByGroup(ctx, queueID, nos, channelID) // one statement for every group
	if err != nil {
		return nil, 0, err
	}
	out := make([]GroupStats, 0, len(groups))
	for _, g := range groups {
		c := counts[g.No]
		out = append(out, GroupStats{ID: g.ID, DisplayName: g.DisplayName, Enabled: g.Enabled, Queue: c.Queue, DLQ: c.DLQ})
	}
	return out, discarded, nil
}

// Channels lists one page of the non-empty channel ids that hold messages (after the page token, which is opaque:
// the last channel of the previous page, base64url-encoded, so that any channel id survives an HTTP header).
func (s *Service) Channels(ctx context.Context, tenancyID, queueID, groupRef string, page, filter string, limit int) ([]string, string, error) {
	groupNo, err := s.resolveGroup(ctx, tenancyID, queueID, groupRef)
	if err != nil {
		return nil, "", err
	}
	last, err := persistence.DecodePageToken(page)
	if err != nil {
		return nil, "", err
	}
	after := string(last)
	prefix, isPrefix := strings.CutSuffix(filter, "*")
	from, inclusive := after, false // the default channel ("") is never listed
	if from < prefix {
		from, inclusive = prefix, true
	}
	var out []string
	done := func() ([]string, string, error) {
		if len(out) <= limit {
			return out, "", nil
		}
		return out[:limit], base64.RawURLEncoding.EncodeToString([]byte(out[limit-1])), nil
	}
	for len(out) <= limit {
		batch, err := s.messages.Channels(ctx, queueID, groupNo, false, from, inclusive, limit+1)
		if err != nil {
			return nil, "", err
		}
		for _, ch := range batch {
			if ch == "" {
				continue
			}
			if filter != "" && ((isPrefix && !strings.HasPrefix(ch, prefix)) || (!isPrefix && ch != filter)) {
				return done() // channels are in order: past the prefix, nothing more matches
			}
			out = append(out, ch)
		}
		if len(batch) < limit+1 {
			return done()
		}
		from, inclusive = batch[len(batch)-1], false
	}
	return done()
}
