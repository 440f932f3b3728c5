package persistence

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every notification reads back as sent, with its send time to the microsecond when it carries one.
func TestNotificationRoundTrip(t *testing.T) {
	sent := time.UnixMicro(1764600000123456)
	for _, n := range []Notification{
		{Kind: MessagesAvailable, QueueID: "ocid1.queue.a"},
		{Kind: MessagesAvailable, QueueID: "ocid1.queue.a", Node: "4f2a"},
		{Kind: MessagesAvailable, QueueID: "ocid1.queue.a", Node: "4f2a", Sent: sent},
		{Kind: DeadLettered, QueueID: "ocid1.queue.a", Node: "4f2a", Sent: sent},
		{Kind: ConsumersChanged, QueueID: "ocid1.queue.a", Node: "4f2a", Sent: sent},
		{Kind: MessagesAvailable, QueueID: "ocid1.queue.a", Sent: sent}, // a sender without a node id
		{Kind: QueueChanged, QueueID: "ocid1.queue.a"},
		{Kind: TenancyChanged, TenancyID: "ocid1.tenancy.t"},
	} {
		got, ok := ParseNotification(n.channel(), n.payload())
		require.True(t, ok, n.payload())
		require.Equal(t, n.Kind, got.Kind, n.payload())
		require.Equal(t, n.QueueID, got.QueueID, n.payload())
		require.Equal(t, n.TenancyID, got.TenancyID, n.payload())
		require.Equal(t, n.Node, got.Node, n.payload())
		require.True(t, n.Sent.Equal(got.Sent), "%s: sent %v, read %v", n.payload(), n.Sent, got.Sent)
	}
}

// A node of the release before send times reads the new payloads' node id and time as a node id that is not its
// own (so it acts on them), and its queue id intact; a new node reads its payloads without a time.
func TestNotificationPayloadsAcrossVersions(t *testing.T) {
	n := Notification{Kind: DeadLettered, QueueID: "ocid1.queue.a", Node: "4f2a", Sent: time.UnixMicro(1)}
	require.Equal(t, "4f2a@1|dlq:ocid1.queue.a", n.payload())

	got, ok := ParseNotification(MessagesChannel, "4f2a|dlq:ocid1.queue.a") // as the older release sends it
	require.True(t, ok)
	require.Equal(t, Notification{Kind: DeadLettered, QueueID: "ocid1.queue.a", Node: "4f2a"}, got)

	got, ok = ParseNotification(MessagesChannel, "4f2a@soon|ocid1.queue.a") // a time that is not one
	require.True(t, ok)
	require.Equal(t, "4f2a@soon", got.Node)
	require.True(t, got.Sent.IsZero())
}

// A put's notification names its channels, whatever they hold; beyond MaxNotifiedChannels, or from a sender that
// does not name them, it names none (nil: the receiver lists the queue's channels again).
func TestNotificationChannels(t *testing.T) {
	sent := time.UnixMicro(1764600000123456)
	named := []string{"", "orders", "a|b", "x,y", "~t", "é %2C"}
	for _, n := range []Notification{
		{Kind: MessagesAvailable, QueueID: "ocid1.queue.a", Node: "4f2a", Sent: sent, Channels: named},
		{Kind: MessagesAvailable, QueueID: "ocid1.queue.a", Node: "4f2a", Channels: []string{""}},
		{Kind: MessagesAvailable, QueueID: "ocid1.queue.a", Channels: []string{"orders"}}, // no node id, no time
	} {
		got, ok := ParseNotification(n.channel(), n.payload())
		require.True(t, ok, n.payload())
		require.Equal(t, n.QueueID, got.QueueID, n.payload())
		require.Equal(t, n.Node, got.Node, n.payload())
		require.True(t, n.Sent.Equal(got.Sent), n.payload())
		require.Equal(t, n.Channels, got.Channels, n.payload())
	}

	many := make([]string, MaxNotifiedChannels+1)
	for i := range many {
		many[i] = string(rune('a' + i))
	}
	for _, n := range []Notification{
		{Kind: MessagesAvailable, QueueID: "ocid1.queue.a", Node: "4f2a", Channels: many},
		{Kind: MessagesAvailable, QueueID: "ocid1.queue.a", Node: "4f2a", Channels: []string{}},
		{Kind: DeadLettered, QueueID: "ocid1.queue.a", Node: "4f2a", Channels: []string{"orders"}},
	} {
		got, ok := ParseNotification(n.channel(), n.payload())
		require.True(t, ok, n.payload())
		require.Equal(t, n.QueueID, got.QueueID, n.payload())
		require.Nil(t, got.Channels, n.payload())
	}

	got, ok := ParseNotification(MessagesChannel, "4f2a@1|ocid1.queue.a") // as the release before sends it
	require.True(t, ok)
	require.Nil(t, got.Channels)
	require.Equal(t, "4f2a@1~,orders|ocid1.queue.a",
		Notification{Kind: MessagesAvailable, QueueID: "ocid1.queue.a", Node: "4f2a", Sent: time.UnixMicro(1), Channels: []string{"", "orders"}}.payload())
}
