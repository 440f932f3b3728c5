package messaging

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/persistence"
)

// channelSet caches, per (queue, group, dlq), the channels that hold messages, so that a GetMessages without a
// channel filter can take from the channels in turn: a channel with a huge backlog cannot starve one with a few
// messages. The list is refreshed (one skip-scan over the lease index) at most every channelRefresh; channels
// published to on this node are added at once, and survive a refresh that was already reading when they were
// published (its snapshot may predate their commit).
type channelSet struct {
	fetch func(ctx context.Context, key channelKey) ([]string, error)
	mu    sync.Mutex
	// The lists by queue, then by key: a notification about a queue visits that queue's lists only, however many
	// queues the node has listed.
	byQueue map[string]map[channelKey]*channelEntry
	entries int
}

// entry is key's list, or nil (under mu).
func (s *channelSet) entry(key channelKey) *channelEntry { return s.byQueue[key.queueID][key] }

const (
	channelRefresh     = time.Second
	channelsPerLease   = 32   // channels one lease takes from at most
	channelsCachedMax  = 4096 // beyond this, the rotation covers the first channelsCachedMax channels
	defaultChannelOnly = ""
)

type channelKey struct {
	queueID string
	groupNo int32
	dlq     bool
}

type channelEntry struct {
	channels []string
	fetched  time.Time // when the list was stored (invalidate zeroes it)
	next     int       // rotation position
	// Reads of the list under way, numbered as they start, and the number of the read the list comes from: a
	// read that started before it does not replace it.
	reading, started, stored uint64
	// The channels published on this node while a read was under way (its snapshot may predate their commit).
	publishedMeanwhile []string
}

func newChannelSet(m *persistence.Messages) *channelSet {
	return &channelSet{byQueue: map[string]map[channelKey]*channelEntry{}, fetch: func(ctx context.Context, key channelKey) ([]string, error) {
		return m.Channels(ctx, key.queueID, key.groupNo, key.dlq, "", true, channelsCachedMax)
	}}
}

// pick returns the channels a lease should take from, in the order to interleave them: all matching channels
// (up to channelsPerLease) starting at a rotating position.
func (s *channelSet) pick(ctx context.Context, key channelKey, filter string) ([]string, error) {
	if filter != "" && !strings.HasSuffix(filter, "*") {
		return []string{filter}, nil // an exact channel
	}
	all, err := s.list(ctx, key)
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(filter, "*")
	matching := all
	if filter != "" {
		matching = nil
		for _, ch := range all {
			if ch != "" && strings.HasPrefix(ch, prefix) {
				matching = append(matching, ch)
			}
		}
	}
	if len(matching) <= 1 {
		if len(matching) == 0 && filter == "" {
			return []string{defaultChannelOnly}, nil
		}
		return matching, nil
	}
	s.mu.Lock()
	e := s.entry(key)
	start := 0
	if e != nil {
		start = e.next % len(matching)
		e.next++
	}
	s.mu.Unlock()
	n := min(len(matching), channelsPerLease)
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, matching[(start+i)%len(matching)])
	}
	return out, nil
}

func (s *channelSet) list(ctx context.Context, key channelKey) ([]string, error) {
	s.mu.Lock()
	e := s.entry(key)
	if e != nil && time.Since(e.fetched) < channelRefresh {
		chans := e.channels
		s.mu.Unlock()
		return chans, nil
	}
	if e == nil {
		if s.entries >= 100000 {
			clear(s.byQueue)
			s.entries = 0
		}
		lists := s.byQueue[key.queueID]
		if lists == nil {
			lists = map[channelKey]*channelEntry{}
			s.byQueue[key.queueID] = lists
		}
		e = &channelEntry{}
		lists[key] = e
		s.entries++
	}
	e.reading++
	e.started++
	read := e.started
	s.mu.Unlock()
	chans, err := s.fetch(ctx, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e.reading--
	defer func() {
		if e.reading == 0 {
			e.publishedMeanwhile = nil
		}
	}()
	if err != nil {
		return nil, err
	}
	if read < e.stored { // a later read has been stored meanwhile
		return e.channels, nil
	}
	// A channel published while the read was under way may be missing from it: keep it. One published before was
	// committed before the read's snapshot, so the read has it if it still holds messages.
	for _, ch := range e.publishedMeanwhile {
		if !slices.Contains(chans, ch) && len(chans) < channelsCachedMax {
			chans = append(chans, ch)
		}
	}
	e.channels, e.fetched, e.stored = chans, time.Now(), read
	return chans, nil
}

// published adds channels just written on this node (so that they are leased before the next refresh).
func (s *channelSet) published(key channelKey, channels map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key)
	if e == nil {
		return // not listed yet: the first lease lists them (a read under way has made the entry)
	}
	for ch := range channels {
		e.add(ch)
	}
}

// publishedElsewhere adds the channels another node's put wrote on a queue (its NOTIFY names them) to every
// listed consumer group of the queue: the put does not say which groups its messages went to, and a channel
// listed for a group that has no message in it costs that group's leases one empty index probe until the next
// refresh.
func (s *channelSet) publishedElsewhere(queueID string, channels []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.byQueue[queueID] {
		if !k.dlq {
			for _, ch := range channels {
				e.add(ch)
			}
		}
	}
}

// add lists ch (under the set's mu), and keeps it through a read under way.
func (e *channelEntry) add(ch string) {
	if !slices.Contains(e.channels, ch) && len(e.channels) < channelsCachedMax {
		e.channels = append(slices.Clip(e.channels), ch)
	}
	if e.reading > 0 && !slices.Contains(e.publishedMeanwhile, ch) && len(e.publishedMeanwhile) < channelsCachedMax {
		e.publishedMeanwhile = append(e.publishedMeanwhile, ch)
	}
}

// invalidate makes the next lease on the queue list its channels again (another node announced messages without
// naming their channels).
func (s *channelSet) invalidate(queueID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.byQueue[queueID] {
		e.fetched = time.Time{}
	}
}
