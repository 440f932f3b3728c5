package messaging

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/persistence"
)

// A window's MessagesAvailable names the channels of its puts, and none when something else marked the queue too
// or the puts wrote more than persistence.MaxNotifiedChannels channels.
func TestNotifierNamesThePutsChannels(t *testing.T) {
	sent := make(chan []persistence.Notification, 1)
	n := newNotifier(time.Millisecond, func(_ context.Context, list []persistence.Notification) error {
		sent <- list
		return nil
	}, nil)
	many := map[string]bool{}
	for i := 0; i <= persistence.MaxNotifiedChannels; i++ {
		many[fmt.Sprint(i)] = true
	}
	n.markPut("a", map[string]bool{"": true})
	n.markPut("a", map[string]bool{"orders": true, "": true})
	n.markPut("b", map[string]bool{"x": true})
	n.mark(persistence.MessagesAvailable, "b") // a release, say
	n.markPut("c", many)
	n.mark(persistence.DeadLettered, "a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go n.run(ctx)
	got := map[notifyKey]bool{}
	var list []persistence.Notification
	select {
	case list = <-sent:
	case <-time.After(5 * time.Second):
		t.Fatal("nothing sent")
	}
	channels := map[string][]string{}
	for _, note := range list {
		if note.Kind == persistence.MessagesAvailable {
			slices.Sort(note.Channels)
			channels[note.QueueID] = note.Channels
		}
		got[notifyKey{kind: note.Kind, queueID: note.QueueID}] = true
	}
	if len(list) != 4 || !got[notifyKey{kind: persistence.DeadLettered, queueID: "a"}] {
		t.Fatalf("sent %+v", list)
	}
	if !slices.Equal(channels["a"], []string{"", "orders"}) || channels["b"] != nil || channels["c"] != nil {
		t.Fatalf("channels named: %q", channels)
	}
}
