package messaging

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// A read of a queue's channels that began before a put on a new channel committed cannot see that channel; the
// channel the put announced must survive the read's result, or an unfiltered GetMessages skips it until the
// next refresh (a second later).
func TestChannelsPublishedDuringARefreshSurviveIt(t *testing.T) {
	for _, listedBefore := range []bool{false, true} {
		reading, release := make(chan struct{}), make(chan []string)
		s := newChannelSet(nil)
		key := channelKey{queueID: "q"}
		if listedBefore {
			s.fetch = func(context.Context, channelKey) ([]string, error) { return []string{"a"}, nil }
			if _, err := s.list(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			s.invalidate("q")
		}
		got := listBlocked(s, key, reading, release)
		s.published(key, map[string]bool{"b": true}) // committed after the read's snapshot
		release <- []string{"a"}
		chans := <-got
		if want := []string{"a", "b"}; !slices.Equal(chans, want) {
			t.Fatalf("listed before: %v: channels %v, want %v", listedBefore, chans, want)
		}
		s.fetch = func(context.Context, channelKey) ([]string, error) {
			t.Fatal("read again within the refresh")
			return nil, nil
		}
		if chans, _ := s.list(context.Background(), key); !slices.Equal(chans, []string{"a", "b"}) {
			t.Fatalf("listed before: %v: cached channels %v", listedBefore, chans)
		}
	}
}

// A read that began before the stored one does not replace it.
func TestChannelsAnOlderReadDoesNotReplaceANewerOne(t *testing.T) {
	s := newChannelSet(nil)
	key := channelKey{queueID: "q"}
	reading, release := make(chan struct{}), make(chan []string)
	got := listBlocked(s, key, reading, release)
	s.fetch = func(context.Context, channelKey) ([]string, error) { return []string{"new"}, nil }
	if chans, _ := s.list(context.Background(), key); !slices.Equal(chans, []string{"new"}) {
		t.Fatalf("newer read: %v", chans)
	}
	release <- []string{"old"}
	if chans := <-got; !slices.Equal(chans, []string{"new"}) {
		t.Fatalf("the older read answered %v, want the newer list", chans)
	}
}

// listBlocked starts a list whose read blocks until release gives its result, and returns once the read began;
// got receives what the list answered.
func listBlocked(s *channelSet, key channelKey, reading chan struct{}, release chan []string) (got chan []string) {
	s.fetch = func(context.Context, channelKey) ([]string, error) {
		close(reading)
		return <-release, nil
	}
	got = make(chan []string)
	go func() {
		chans, _ := s.list(context.Background(), key)
		got <- chans
	}()
	<-reading
	return got
}

// A put on another node names its channels in its NOTIFY: they join the lists of the queue's consumer groups
// (not of its DLQs, nor of other queues) without a read of the queue's channels, which a busy queue paid after
// every NOTIFY.
func TestChannelsNamedByAnotherNodeNeedNoRead(t *testing.T) {
	s := newChannelSet(nil)
	reads := 0
	s.fetch = func(context.Context, channelKey) ([]string, error) { reads++; return []string{""}, nil }
	keys := []channelKey{{queueID: "q"}, {queueID: "q", groupNo: 1}, {queueID: "q", dlq: true}, {queueID: "other"}}
	for _, k := range keys {
		if _, err := s.list(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	s.publishedElsewhere("q", []string{"", "orders"})
	for _, k := range keys {
		chans, _ := s.list(context.Background(), k)
		want := []string{""}
		if k.queueID == "q" && !k.dlq {
			want = []string{"", "orders"}
		}
		if !slices.Equal(chans, want) {
			t.Fatalf("%+v: channels %v, want %v", k, chans, want)
		}
	}
	if reads != len(keys) {
		t.Fatalf("%d reads of the channels, want %d (one per list)", reads, len(keys))
	}
	s.invalidate("q") // a NOTIFY that names none
	if _, err := s.list(context.Background(), keys[0]); err != nil || reads != len(keys)+1 {
		t.Fatalf("after an unnamed NOTIFY: %d reads, want %d (%v)", reads, len(keys)+1, err)
	}
}

// A notification about one queue, on a node that has listed the channels of 10,000 queues: it visits that queue's
// lists, not every list.
func BenchmarkChannelsNotifiedAmongManyQueues(b *testing.B) {
	s := newChannelSet(nil)
	s.fetch = func(context.Context, channelKey) ([]string, error) { return []string{""}, nil }
	for q := range 10000 {
		if _, err := s.list(context.Background(), channelKey{queueID: fmt.Sprint("q", q)}); err != nil {
			b.Fatal(err)
		}
	}
	channels := []string{""}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.publishedElsewhere(fmt.Sprint("q", i%10000), channels)
	}
}
