package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// Msg is a message with content only.
func Msg(content string) sdk.PutMessagesDetailsEntry {
	return sdk.PutMessagesDetailsEntry{Content: content}
}

// MsgOn is a message on a channel.
func MsgOn(content, channel string) sdk.PutMessagesDetailsEntry {
	return sdk.PutMessagesDetailsEntry{Content: content, Metadata: &sdk.MessageMetadata{ChannelId: &channel}}
}

// WithMeta is a message with metadata.
func WithMeta(content string, md sdk.MessageMetadata) sdk.PutMessagesDetailsEntry {
	return sdk.PutMessagesDetailsEntry{Content: content, Metadata: &md}
}

// WithAttrs is a message with attributes (none when attrs is nil).
func WithAttrs(content string, attrs map[string]any) sdk.PutMessagesDetailsEntry {
	if attrs == nil {
		return Msg(content)
	}
	a := sdk.MessageAttributes(attrs)
	return sdk.PutMessagesDetailsEntry{Content: content, Attributes: &a}
}

// InGroup is a message of an ordered message group.
func InGroup(content, group string) sdk.PutMessagesDetailsEntry {
	return WithMeta(content, sdk.MessageMetadata{MessageGroupId: &group})
}

// GetOption is a GetMessages parameter.
type GetOption func(*sdk.GetMessagesParams)

// Limit sets how many messages a GetMessages may return.
func Limit(n int) GetOption { return func(p *sdk.GetMessagesParams) { p.Limit = &n } }

// Visibility sets the lease's visibilityInSeconds.
func Visibility(n int) GetOption {
	return func(p *sdk.GetMessagesParams) { p.VisibilityInSeconds = &n }
}

// Timeout sets the long poll's timeoutInSeconds (Get's default is 0: no wait).
func Timeout(n int) GetOption { return func(p *sdk.GetMessagesParams) { p.TimeoutInSeconds = &n } }

// ChannelFilter sets the channelFilter.
func ChannelFilter(f string) GetOption {
	return func(p *sdk.GetMessagesParams) { p.ChannelFilter = &f }
}

// FromDLQ reads the dead letter queue.
func FromDLQ() GetOption { return func(p *sdk.GetMessagesParams) { t := true; p.Dlq = &t } }

// OfGroup addresses a consumer group (OCID or displayName).
func OfGroup(ref string) GetOption {
	return func(p *sdk.GetMessagesParams) { p.ConsumerGroupId = &ref }
}

// As names the consumer of a GetMessages call.
func As(consumer string) GetOption {
	return func(p *sdk.GetMessagesParams) { p.ConsumerId = &consumer }
}

// Put publishes a batch, requires the 200 and a result per message, and returns the results.
func (c *Client) Put(t testing.TB, queueID string, entries ...sdk.PutMessagesDetailsEntry) []sdk.PutMessagesResultEntry {
	t.Helper()
	resp, err := c.PutMessagesWithResponse(context.Background(), queueID, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: entries})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Len(t, resp.JSON200.Messages, len(entries))
	return resp.JSON200.Messages
}

// PutErr publishes a batch that must fail and returns the response.
func (c *Client) PutErr(t testing.TB, queueID string, entries ...sdk.PutMessagesDetailsEntry) *sdk.PutMessagesResponse {
	t.Helper()
	resp, err := c.PutMessagesWithResponse(context.Background(), queueID, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: entries})
	require.NoError(t, err)
	require.NotEqual(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp
}

// TryPut publishes one message and returns the status and body (no requirement on them).
func (c *Client) TryPut(t testing.TB, queueID, content string) (int, []byte) {
	t.Helper()
	resp, err := c.PutMessagesWithResponse(context.Background(), queueID, &sdk.PutMessagesParams{},
		sdk.PutMessagesDetails{Messages: []sdk.PutMessagesDetailsEntry{Msg(content)}})
	require.NoError(t, err)
	return resp.StatusCode(), resp.Body
}

// Get leases messages (without waiting, unless Timeout says otherwise) and requires the 200.
func (c *Client) Get(t testing.TB, queueID string, opts ...GetOption) []sdk.GetMessage {
	t.Helper()
	resp := c.getMessages(t, queueID, opts)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200.Messages
}

// TryGet leases messages (without waiting) and returns the status and body (no requirement on them).
func (c *Client) TryGet(t testing.TB, queueID string, opts ...GetOption) (int, []byte) {
	t.Helper()
	resp := c.getMessages(t, queueID, opts)
	return resp.StatusCode(), resp.Body
}

func (c *Client) getMessages(t testing.TB, queueID string, opts []GetOption) *sdk.GetMessagesResponse {
	t.Helper()
	zero := 0
	p := &sdk.GetMessagesParams{TimeoutInSeconds: &zero}
	for _, o := range opts {
		o(p)
	}
	resp, err := c.GetMessagesWithResponse(context.Background(), queueID, p)
	require.NoError(t, err)
	return resp
}

// GetResult is the outcome of a GetAsync.
type GetResult struct {
	Msgs []sdk.GetMessage
	At   time.Time // when the answer came
	Err  error     // also set for an answer other than 200
}

// GetAsync runs a GetMessages (a long poll, usually) in the background.
func (c *Client) GetAsync(queueID string, params *sdk.GetMessagesParams) <-chan GetResult {
	done := make(chan GetResult, 1)
	go func() {
		resp, err := c.GetMessagesWithResponse(context.Background(), queueID, params)
		if err == nil && resp.JSON200 == nil {
			err = fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body)
		}
		if err != nil {
			done <- GetResult{Err: err, At: time.Now()}
			return
		}
		done <- GetResult{Msgs: resp.JSON200.Messages, At: time.Now()}
	}()
	return done
}

// Drain leases everything visible (long visibility) and returns the contents, sorted.
func (c *Client) Drain(t testing.TB, queueID string, opts ...GetOption) []string {
	t.Helper()
	var out []string
	for {
		got := c.Get(t, queueID, append(opts, Limit(32), Visibility(300))...)
		if len(got) == 0 {
			slices.Sort(out)
			return out
		}
		out = append(out, Contents(got)...)
	}
}

// DeleteAll acknowledges messages by receipt (in batches of 20) and requires every entry to succeed. Of opts,
// FromDLQ and OfGroup apply.
func (c *Client) DeleteAll(t testing.TB, queueID string, msgs []sdk.GetMessage, opts ...GetOption) {
	t.Helper()
	p := &sdk.GetMessagesParams{}
	for _, o := range opts {
		o(p)
	}
	for start := 0; start < len(msgs); start += 20 {
		var entries []sdk.DeleteMessagesDetailsEntry
		for _, m := range msgs[start:min(start+20, len(msgs))] {
			entries = append(entries, sdk.DeleteMessagesDetailsEntry{Receipt: m.Receipt})
		}
		resp, err := c.DeleteMessagesWithResponse(context.Background(), queueID, &sdk.DeleteMessagesParams{Dlq: p.Dlq, ConsumerGroupId: p.ConsumerGroupId},
			sdk.DeleteMessagesDetails{Entries: entries})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
		require.Zero(t, resp.JSON200.ClientFailures+resp.JSON200.ServerFailures, string(resp.Body))
	}
}

// Release ends a lease at once (UpdateMessage with visibilityInSeconds 0).
func (c *Client) Release(t testing.TB, queueID string, m sdk.GetMessage) {
	t.Helper()
	resp, err := c.UpdateMessageWithResponse(context.Background(), queueID, m.Receipt, &sdk.UpdateMessageParams{},
		sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
}

// Stats reads GET /stats of the queue.
func (c *Client) Stats(t testing.TB, queueID string) *sdk.QueueStats {
	t.Helper()
	return c.stats(t, queueID, &sdk.GetStatsParams{})
}

// StatsOf counts one channel's messages ("" = every channel).
func (c *Client) StatsOf(t testing.TB, queueID, channel string) *sdk.QueueStats {
	t.Helper()
	p := &sdk.GetStatsParams{}
	if channel != "" {
		p.ChannelId = &channel
	}
	return c.stats(t, queueID, p)
}

// GroupStats reads GET /stats for one consumer group (OCID or displayName).
func (c *Client) GroupStats(t testing.TB, queueID, ref string) *sdk.QueueStats {
	t.Helper()
	return c.stats(t, queueID, &sdk.GetStatsParams{ConsumerGroupId: &ref})
}

func (c *Client) stats(t testing.TB, queueID string, p *sdk.GetStatsParams) *sdk.QueueStats {
	t.Helper()
	resp, err := c.GetStatsWithResponse(context.Background(), queueID, p)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200
}

// RequireStats checks the queue's and the DLQ's visible and in-flight counts.
func (c *Client) RequireStats(t testing.TB, queueID string, visible, inFlight, dlqVisible, dlqInFlight int64) {
	t.Helper()
	st := c.Stats(t, queueID)
	require.Equal(t, [4]int64{visible, inFlight, dlqVisible, dlqInFlight},
		[4]int64{st.Queue.VisibleMessages, st.Queue.InFlightMessages, st.Dlq.VisibleMessages, st.Dlq.InFlightMessages},
		"stats (visible, in flight, DLQ visible, DLQ in flight)")
}

// Consumers lists the consumers of a queue (every group) and requires the 200.
func (c *Client) Consumers(t testing.TB, queueID string) *sdk.ConsumerCollection {
	t.Helper()
	return c.consumers(t, queueID, &sdk.ListConsumersParams{})
}

// ConsumersOf lists the consumers of a queue's primary group as "id:STATUS", the active one first.
func (c *Client) ConsumersOf(t testing.TB, queueID string) []string {
	t.Helper()
	out := []string{}
	for _, cs := range c.consumers(t, queueID, &sdk.ListConsumersParams{ConsumerGroupId: &queueID}).Items {
		require.Equal(t, queueID, cs.ConsumerGroupId, "the primary group's id is the queue's")
		require.GreaterOrEqual(t, cs.IdleSeconds, 0)
		out = append(out, cs.Id+":"+string(cs.Status))
	}
	return out
}

func (c *Client) consumers(t testing.TB, queueID string, p *sdk.ListConsumersParams) *sdk.ConsumerCollection {
	t.Helper()
	resp, err := c.ListConsumersWithResponse(context.Background(), queueID, p)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200
}

// Leave removes a consumer (DeleteConsumer) and requires the 204.
func (c *Client) Leave(t testing.TB, queueID, consumer string) {
	t.Helper()
	resp, err := c.DeleteConsumerWithResponse(context.Background(), queueID, consumer, &sdk.DeleteConsumerParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, resp.StatusCode(), string(resp.Body))
}

// IDs returns the messages' ids.
func IDs(msgs []sdk.GetMessage) []int64 {
	return Map(msgs, func(m sdk.GetMessage) int64 { return m.Id })
}

// Contents returns the messages' contents.
func Contents(msgs []sdk.GetMessage) []string {
	return Map(msgs, func(m sdk.GetMessage) string { return m.Content })
}

// Receipts returns the messages' receipts.
func Receipts(msgs []sdk.GetMessage) []string {
	return Map(msgs, func(m sdk.GetMessage) string { return m.Receipt })
}

// DeliveryCounts returns the messages' delivery counts.
func DeliveryCounts(msgs []sdk.GetMessage) []int {
	return Map(msgs, func(m sdk.GetMessage) int { return m.DeliveryCount })
}

// GroupOf is the messageGroupId a received message carries ("" without one).
func GroupOf(m sdk.GetMessage) string {
	if m.Metadata == nil || m.Metadata.MessageGroupId == nil {
		return ""
	}
	return *m.Metadata.MessageGroupId
}

// GroupCounts returns the consumerGroups count of each put result (-1 where absent).
func GroupCounts(res []sdk.PutMessagesResultEntry) []int {
	return Map(res, func(r sdk.PutMessagesResultEntry) int {
		if r.ConsumerGroups == nil {
			return -1
		}
		return *r.ConsumerGroups
	})
}

// Map applies f to each of in (the ids, names or contents of a list, for comparing it).
func Map[T, V any](in []T, f func(T) V) []V {
	out := make([]V, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// KeepPutting publishes entry again and again from n goroutines, ignoring the answers (it keeps a node's caches
// busy while a test changes what they hold), until the returned stop is called; stop waits for them to end.
func (c *Client) KeepPutting(n int, queueID string, entry sdk.PutMessagesDetailsEntry) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				_, _ = c.PutMessagesWithResponse(context.Background(), queueID, &sdk.PutMessagesParams{},
					sdk.PutMessagesDetails{Messages: []sdk.PutMessagesDetailsEntry{entry}})
			}
		})
	}
	return func() { close(done); wg.Wait() }
}
