package sdk

// Hand-written (not generated): the client of WatchMessages, a WebSocket that oapi-codegen does not describe.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// WatchOptions configure Watch.
type WatchOptions struct {
	Token           string // bearer token
	ConsumerGroupID string // OCID or displayName; "" = the primary group
	ConsumerID      string // X-Ferry-Consumer-Id; "" = the server generates one
	Window          int    // 1..1000; 0 = the server's default (100)
	AutoCommit      bool
	ChannelFilter   string
	HTTPClient      *http.Client
	// IgnorePings makes the client stop answering the server's pings (to test dead-consumer detection).
	IgnorePings *atomic.Bool
}

// WatchEntryError is a commit or negative entry that failed.
type WatchEntryError struct {
	Index   int    `json:"index"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WatchError is an error answered by the server: the upgrade was refused (StatusCode), or a frame failed.
type WatchError struct {
	StatusCode int // HTTP status of a refused upgrade; 0 for a frame error
	Code       string
	Message    string
}

func (e *WatchError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("watch: %d %s: %s", e.StatusCode, e.Code, e.Message)
	}
	return fmt.Sprintf("watch: %s: %s", e.Code, e.Message)
}

// Watcher is an open watch: messages arrive on Messages(); acknowledge them with Commit or release them with
// Negative. The server never pushes more than Window unacknowledged messages. On a PARTITION consumer group
// (LoadBalancing "PARTITION"), frames arrive on Partitions() instead, and CommitOffsets commits offsets.
type Watcher struct {
	ConsumerID      string
	ConsumerGroupID string
	Window          int
	AutoCommit      bool
	LoadBalancing   string // MESSAGE or PARTITION

	conn       *websocket.Conn
	messages   chan GetMessage
	partitions chan PartitionMessages
	done       chan struct{}
	status     atomic.Value // string: RUNNING, STANDBY, LEAVING
	statuses   chan string

	mu      sync.Mutex
	nextID  int
	replies map[string]chan watchReply
	err     error
}

type watchFrame struct {
	ConsumerID      string           `json:"consumerId"`
	ConsumerGroupID string           `json:"consumerGroupId"`
	Window          int              `json:"window"`
	AutoCommit      bool             `json:"autoCommit"`
	LoadBalancing   string           `json:"loadBalancing"`
	Partitions      *json.RawMessage `json:"partitions"`
	Messages        json.RawMessage  `json:"messages"`
	Status          string           `json:"status"`
	Reply           *watchReply      `json:"reply"`
	Error           *Error           `json:"error"`
}

type watchReply struct {
	ID     string            `json:"id"`
	Errors []WatchEntryError `json:"errors"`
	Error  *Error            `json:"error"`
}

// Watch opens a watch on a queue's consumer group at server (the base URL, e.g. http://127.0.0.1:8080).
func Watch(ctx context.Context, server, queueID string, opts WatchOptions) (*Watcher, error) {
	q := url.Values{}
	if opts.ConsumerGroupID != "" {
		q.Set("consumerGroupId", opts.ConsumerGroupID)
	}
	if opts.Window != 0 {
		q.Set("window", strconv.Itoa(opts.Window))
	}
	if opts.AutoCommit {
		q.Set("autoCommit", "true")
	}
	if opts.ChannelFilter != "" {
		q.Set("channelFilter", opts.ChannelFilter)
	}
	u := strings.TrimSuffix(server, "/") + "/20210201/queues/" + url.PathEscape(queueID) + "/messages/watch"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	header := http.Header{}
	if opts.Token != "" {
		header.Set("Authorization", "Bearer "+opts.Token)
	}
	if opts.ConsumerID != "" {
		header.Set("X-Ferry-Consumer-Id", opts.ConsumerID)
	}
	dial := &websocket.DialOptions{HTTPClient: opts.HTTPClient, HTTPHeader: header}
	if opts.IgnorePings != nil {
		dial.OnPingReceived = func(context.Context, []byte) bool { return !opts.IgnorePings.Load() }
	}
	conn, resp, err := websocket.Dial(ctx, u, dial)
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			var e Error
			_ = json.Unmarshal(body, &e)
			return nil, &WatchError{StatusCode: resp.StatusCode, Code: e.Code, Message: e.Message}
		}
		return nil, err
	}
	conn.SetReadLimit(64 << 20) // a frame holds up to 128 messages of up to 256 KiB
	_, data, err := conn.Read(ctx)
	if err != nil {
		_ = conn.CloseNow()
		return nil, err
	}
	var hello watchFrame
	if err := json.Unmarshal(data, &hello); err != nil || hello.ConsumerID == "" {
		_ = conn.CloseNow()
		return nil, fmt.Errorf("watch: unexpected first frame %q", data)
	}
	w := &Watcher{
		ConsumerID: hello.ConsumerID, ConsumerGroupID: hello.ConsumerGroupID, Window: hello.Window, AutoCommit: hello.AutoCommit,
		LoadBalancing: hello.LoadBalancing,
		conn:          conn, messages: make(chan GetMessage, max(hello.Window, 32)), partitions: make(chan PartitionMessages, 8),
		done:     make(chan struct{}),
		statuses: make(chan string, 8), replies: map[string]chan watchReply{},
	}
	w.status.Store("RUNNING")
	go w.read()
	return w, nil
}

// Messages delivers the pushed messages; it is closed when the watch ends.
func (w *Watcher) Messages() <-chan GetMessage { return w.messages }

// Partitions delivers a PARTITION group's frames: the consumer's partitions now and messages of them (none: its
// partitions changed); it is closed when the watch ends.
func (w *Watcher) Partitions() <-chan PartitionMessages { return w.partitions }

// CommitOffsets commits offsets of a PARTITION group (all or none) and waits for the server's answer: a
// *WatchError with Code "StaleGeneration" when the consumer does not own a partition at that generation.
func (w *Watcher) CommitOffsets(ctx context.Context, offsets ...PartitionOffset) error {
	_, err := w.send(ctx, map[string]any{"commit": offsets})
	return err
}

// Statuses delivers the status changes the server announces (STANDBY, RUNNING, LEAVING); it is never closed and
// drops changes nobody reads.
func (w *Watcher) Statuses() <-chan string { return w.statuses }

// Status is the consumer's last announced status.
func (w *Watcher) Status() string { return w.status.Load().(string) }

// Done is closed when the watch ends; Err tells why.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Err is why the watch ended (nil while it is open).
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Commit acknowledges messages and waits for the server's answer: the entries that failed.
func (w *Watcher) Commit(ctx context.Context, receipts ...string) ([]WatchEntryError, error) {
	return w.send(ctx, map[string]any{"commit": receipts})
}

// Negative releases messages now (they are delivered again, to any consumer of the group), with a code
// (CamelCase words with an optional .Detail, or a number) and a reason kept on the messages.
func (w *Watcher) Negative(ctx context.Context, code, reason string, receipts ...string) ([]WatchEntryError, error) {
	if receipts == nil {
		receipts = []string{}
	}
	return w.send(ctx, map[string]any{"negative": receipts, "code": code, "reason": reason})
}

// Shutdown stops the pushing to this consumer and releases every message it holds; the watch stays open until
// Close.
func (w *Watcher) Shutdown(ctx context.Context) error {
	_, err := w.Negative(ctx, "Shutdown", "")
	return err
}

// Close closes the watch; the server releases the messages the consumer holds at once.
func (w *Watcher) Close() error {
	err := w.conn.Close(websocket.StatusNormalClosure, "")
	<-w.done
	return err
}

// Abort drops the connection without a close handshake (as a crashed consumer would).
func (w *Watcher) Abort() {
	_ = w.conn.CloseNow()
	<-w.done
}

// Handle calls fn for each message until ctx ends or the watch does: a nil error commits the message, an error
// releases it (a *NegativeError names the code and reason; any other error is sent as code "Failed").
func (w *Watcher) Handle(ctx context.Context, fn func(context.Context, GetMessage) error) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-w.messages:
			if !ok {
				return w.Err()
			}
			err := fn(ctx, m)
			if w.AutoCommit {
				continue
			}
			if err == nil {
				_, err = w.Commit(ctx, m.Receipt)
			} else {
				var ne *NegativeError
				if !errors.As(err, &ne) {
					ne = &NegativeError{Code: "Failed", Reason: err.Error()}
				}
				_, err = w.Negative(ctx, ne.Code, ne.Reason, m.Receipt)
			}
			if err != nil {
				return err
			}
		}
	}
}

// NegativeError, returned by a Handle callback, releases the message with this code and reason.
type NegativeError struct {
	Code   string
	Reason string
}

func (e *NegativeError) Error() string { return e.Code + ": " + e.Reason }

func (w *Watcher) send(ctx context.Context, frame map[string]any) ([]WatchEntryError, error) {
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return nil, err
	}
	w.nextID++
	id := strconv.Itoa(w.nextID)
	ch := make(chan watchReply, 1)
	w.replies[id] = ch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.replies, id)
		w.mu.Unlock()
	}()
	frame["id"] = id
	data, err := json.Marshal(frame)
	if err != nil {
		return nil, err
	}
	if err := w.conn.Write(ctx, websocket.MessageText, data); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return r.Errors, &WatchError{Code: r.Error.Code, Message: r.Error.Message}
		}
		return r.Errors, nil
	case <-w.done:
		return nil, w.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (w *Watcher) read() {
	var err error
	defer func() {
		w.mu.Lock()
		if err == nil {
			err = errors.New("watch: closed")
		}
		w.err = err
		w.mu.Unlock()
		close(w.messages)
		close(w.partitions)
		close(w.done)
	}()
	for {
		var data []byte
		_, data, err = w.conn.Read(context.Background())
		if err != nil {
			return
		}
		var f watchFrame
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		switch {
		case f.Reply != nil:
			w.mu.Lock()
			ch := w.replies[f.Reply.ID]
			w.mu.Unlock()
			if ch != nil {
				ch <- *f.Reply
			}
		case f.Status != "":
			w.status.Store(f.Status)
			select {
			case w.statuses <- f.Status:
			default:
			}
		case f.Error != nil:
			// A frame the server could not read; nothing waits for it.
		case f.Partitions != nil:
			var p PartitionMessages
			if json.Unmarshal(data, &p) == nil {
				w.partitions <- p
			}
		default:
			var msgs []GetMessage
			_ = json.Unmarshal(f.Messages, &msgs)
			for _, m := range msgs {
				w.messages <- m
			}
		}
	}
}
