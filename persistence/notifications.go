package persistence

import (
	"context"
	"strings"

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
}

// Payload prefixes (the queue or tenancy OCID follows). A message wake-up has none; a node id is followed by '|'.
const (
	deadLetteredPrefix     = "dlq:"
	consumersChangedPrefix = "consumers:"
	tenancyChangedPrefix   = "iam:"
	nodeSeparator          = "|"
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
	if n.Node != "" {
		return n.Node + nodeSeparator + p
	}
	return p
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
		if node, rest, found := strings.Cut(payload, nodeSeparator); found {
			n.Node, payload = node, rest
		}
		switch {
		case strings.HasPrefix(payload, deadLetteredPrefix):
			n.Kind, n.QueueID = DeadLettered, payload[len(deadLetteredPrefix):]
		case strings.HasPrefix(payload, consumersChangedPrefix):
			n.Kind, n.QueueID = ConsumersChanged, payload[len(consumersChangedPrefix):]
		default:
			n.Kind, n.QueueID = MessagesAvailable, payload
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
