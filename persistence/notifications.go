package persistence

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Nodes tell each other of changes with LISTEN/NOTIFY: a put wakes the long polls and watches of every node, a
// change to a queue's consumer groups or a tenancy's policies makes every node drop what it cached. This file is
// the one place that knows the channels and the payloads; senders and the listener exchange Notification values.

// The LISTEN/NOTIFY channels.
const (
	// MessagesChannel carries the data plane's wake-ups (sent after commit, batched by the sending node).
	MessagesChannel = "ferry_messages"
	// ConfigChannel carries configuration changes (sent by the changing transaction, so delivered on commit).
	ConfigChannel = "ferry_config"
)

// NotificationKind says what a notification announces.
type NotificationKind uint8

// The kinds of notification.
const (
	// MessagesAvailable: the queue has new visible messages (a put, a release, an unblocked ordered group).
	MessagesAvailable NotificationKind = iota + 1
	// DeadLettered: messages moved to the queue's DLQs (readers of a DLQ wait apart from the queue's consumers).
	DeadLettered
	// ConsumersChanged: a consumer of the queue left or was removed (standbys look again, watches check their
	// registrations).
	ConsumersChanged
	// QueueChanged: the queue's settings or consumer groups changed (every node drops its cached copies).
	QueueChanged
	// TenancyChanged: the tenancy's policies or compartments changed (every node reloads its IAM decisions).
	TenancyChanged
)

// Notification is one message between nodes.
type Notification struct {
	Kind NotificationKind
	// Node is the sending node's id on MessagesChannel ("" when unnamed): a node has already acted on its own
	// announcements when it sent them, and ignores them when they come back.
	Node      string
	QueueID   string // every kind but TenancyChanged
	TenancyID string // TenancyChanged
	// Sent is when the sender sent it, on MessagesChannel (zero when it did not say): the receiver records the
	// NOTIFY path's lag from it. It travels to the microsecond.
	Sent time.Time
	// Channels are, on a MessagesAvailable, the channels the announced messages were put on; nil when the sender
	// does not say (another cause, or more than MaxNotifiedChannels), and then the receiver must list the queue's
	// channels again. With them, a receiver adds them to its list instead: listing a busy queue's channels walks
	// the dead entries at the head of its lease index, which took 10–25 ms, and it ran after every NOTIFY.
	Channels []string
}

// MaxNotifiedChannels bounds the channels one notification names (a NOTIFY payload holds at most 8,000 bytes).
const (
	MaxNotifiedChannels     = 16
	maxNotifiedChannelBytes = 2048
)

// Payload prefixes (the queue or tenancy OCID follows). A message wake-up has none. On MessagesChannel the sender
// comes first, ended by '|': its node id, then '@' and the send time in Unix microseconds when it gives one,
// then '~' and the channels when it names them, each query-escaped, separated by ','
// ("4f2a…@1764600000123456~,orders|ocid1.queue…" for the default channel and "orders"). A node that knows no send
// time or channels reads what follows the node id as part of it, a node id that is not its own, and acts on the
// notification all the same.
const (
	deadLetteredPrefix     = "dlq:"
	consumersChangedPrefix = "consumers:"
	tenancyChangedPrefix   = "iam:"
	nodeSeparator          = "|"
	sentSeparator          = "@"
	channelsSeparator      = "~"
)

// channel is the channel n travels on.
func (n Notification) channel() string {
	if n.Kind == QueueChanged || n.Kind == TenancyChanged {
		return ConfigChannel
	}
	return MessagesChannel
}

// payload renders n for pg_notify.
func (n Notification) payload() string {
	var p string
	switch n.Kind {
	case DeadLettered:
		p = deadLetteredPrefix + n.QueueID
	case ConsumersChanged:
		p = consumersChangedPrefix + n.QueueID
	case TenancyChanged:
		return tenancyChangedPrefix + n.TenancyID
	case QueueChanged:
		return n.QueueID
	default:
		p = n.QueueID
	}
	sender := n.Node
	if !n.Sent.IsZero() {
		sender += sentSeparator + strconv.FormatInt(n.Sent.UnixMicro(), 10)
	}
	if chans, ok := encodeChannels(n.Kind, n.Channels); ok {
		sender += channelsSeparator + chans
	} else if sender == "" {
		return p
	}
	return sender + nodeSeparator + p
}

// encodeChannels renders the channels of a MessagesAvailable, when they are few enough to name.
func encodeChannels(kind NotificationKind, channels []string) (string, bool) {
	if kind != MessagesAvailable || len(channels) == 0 || len(channels) > MaxNotifiedChannels {
		return "", false
	}
	var b strings.Builder
	for i, ch := range channels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(url.QueryEscape(ch))
		if b.Len() > maxNotifiedChannelBytes {
			return "", false
		}
	}
	return b.String(), true
}

// decodeChannels reads what encodeChannels wrote; nil when it is not that.
func decodeChannels(s string) []string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		ch, err := url.QueryUnescape(p)
		if err != nil {
			return nil
		}
		parts[i] = ch
	}
	return parts
}

// ParseNotification reads a notification received on channel; ok is false for a payload of no known form.
func ParseNotification(channel, payload string) (n Notification, ok bool) {
	switch channel {
	case ConfigChannel:
		if tenancyID, found := strings.CutPrefix(payload, tenancyChangedPrefix); found {
			return Notification{Kind: TenancyChanged, TenancyID: tenancyID}, tenancyID != ""
		}
		return Notification{Kind: QueueChanged, QueueID: payload}, payload != ""
	case MessagesChannel:
		var chans string
		var named bool
		if sender, rest, found := strings.Cut(payload, nodeSeparator); found {
			payload = rest
			sender, chans, named = strings.Cut(sender, channelsSeparator)
			n.Node = sender
			if node, sent, found := strings.Cut(sender, sentSeparator); found {
				if us, err := strconv.ParseInt(sent, 10, 64); err == nil {
					n.Node, n.Sent = node, time.UnixMicro(us)
				}
			}
		}
		switch {
		case strings.HasPrefix(payload, deadLetteredPrefix):
			n.Kind, n.QueueID = DeadLettered, payload[len(deadLetteredPrefix):]
		case strings.HasPrefix(payload, consumersChangedPrefix):
			n.Kind, n.QueueID = ConsumersChanged, payload[len(consumersChangedPrefix):]
		default:
			n.Kind, n.QueueID = MessagesAvailable, payload
			if named {
				n.Channels = decodeChannels(chans)
			}
		}
		return n, n.QueueID != ""
	}
	return n, false
}

// notifySQL sends a notification per (channel, payload) pair: one statement for a whole batch.
const notifySQL = `SELECT pg_notify(n.channel, n.payload) FROM unnest($1::text[], $2::text[]) AS n(channel, payload)`

// notifyArgs are the arguments of notifySQL for list.
func notifyArgs(list []Notification) (channels, payloads []string) {
	channels, payloads = make([]string, len(list)), make([]string, len(list))
	for i, n := range list {
		channels[i], payloads[i] = n.channel(), n.payload()
	}
	return channels, payloads
}

// execer is a pool, a connection or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Notify sends the notifications in one statement (in a transaction: delivered when it commits).
func Notify(ctx context.Context, db execer, list ...Notification) error {
	if len(list) == 0 {
		return nil
	}
	channels, payloads := notifyArgs(list)
	_, err := db.Exec(ctx, notifySQL, channels, payloads)
	return err
}
