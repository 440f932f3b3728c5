package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// queueOpts are CreateQueue settings for data-plane tests.
type queueOpts func(*sdk.CreateQueueDetails)

func withDLQ(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.DeadLetterQueueDeliveryCount = &n }
}
func withVisibility(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.VisibilityInSeconds = &n }
}
func withTimeout(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.TimeoutInSeconds = &n }
}
func withRetention(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.RetentionInSeconds = &n }
}
func withDedup(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.DeduplicationWindowInSeconds = &n }
}
func withMaxSize(n int64) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.MaxSizeInBytes = &n }
}
func withChannelLimit(n int) queueOpts {
	return func(d *sdk.CreateQueueDetails) { d.ChannelConsumptionLimit = &n }
}

// withConsumerGroups creates the queue with the CONSUMER_GROUPS capability (and so its primary group).
func withConsumerGroups(primaryEnabled bool) queueOpts {
	return func(d *sdk.CreateQueueDetails) {
		d.Capabilities = &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, IsPrimaryConsumerGroupEnabled: &primaryEnabled}}
	}
}

func createQueue(t *testing.T, c *sdk.ClientWithResponses, compartmentID string, opts ...queueOpts) string {
	t.Helper()
	d := sdk.CreateQueueDetails{CompartmentId: compartmentID, DisplayName: "q-" + strconv.Itoa(len(t.Name()))}
	for _, o := range opts {
		o(&d)
	}
	resp, err := c.CreateQueueWithResponse(context.Background(), &sdk.CreateQueueParams{}, d)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200.Id
}

func put(t *testing.T, c *sdk.ClientWithResponses, queueID string, entries ...sdk.PutMessagesDetailsEntry) []sdk.PutMessagesResultEntry {
	t.Helper()
	resp, err := c.PutMessagesWithResponse(context.Background(), queueID, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: entries})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Len(t, resp.JSON200.Messages, len(entries))
	return resp.JSON200.Messages
}

func msg(content string) sdk.PutMessagesDetailsEntry {
	return sdk.PutMessagesDetailsEntry{Content: content}
}

func msgOn(content, channel string) sdk.PutMessagesDetailsEntry {
	return sdk.PutMessagesDetailsEntry{Content: content, Metadata: &sdk.MessageMetadata{ChannelId: &channel}}
}

type getOpts func(*sdk.GetMessagesParams)

func limit(n int) getOpts            { return func(p *sdk.GetMessagesParams) { p.Limit = &n } }
func visibility(n int) getOpts       { return func(p *sdk.GetMessagesParams) { p.VisibilityInSeconds = &n } }
func timeout(n int) getOpts          { return func(p *sdk.GetMessagesParams) { p.TimeoutInSeconds = &n } }
func channelFilter(f string) getOpts { return func(p *sdk.GetMessagesParams) { p.ChannelFilter = &f } }
func fromDLQ() getOpts               { return func(p *sdk.GetMessagesParams) { t := true; p.Dlq = &t } }

// ofGroup addresses a consumer group (OCID or displayName).
func ofGroup(ref string) getOpts { return func(p *sdk.GetMessagesParams) { p.ConsumerGroupId = &ref } }

func get(t *testing.T, c *sdk.ClientWithResponses, queueID string, opts ...getOpts) []sdk.GetMessage {
	t.Helper()
	zero := 0
	p := &sdk.GetMessagesParams{TimeoutInSeconds: &zero}
	for _, o := range opts {
		o(p)
	}
	resp, err := c.GetMessagesWithResponse(context.Background(), queueID, p)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200.Messages
}

func stats(t *testing.T, c *sdk.ClientWithResponses, queueID string) *sdk.QueueStats {
	t.Helper()
	resp, err := c.GetStatsWithResponse(context.Background(), queueID, &sdk.GetStatsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200
}

// statsOf counts one channel's messages ("" = every channel).
func statsOf(t *testing.T, c *sdk.ClientWithResponses, queueID, channel string) *sdk.QueueStats {
	t.Helper()
	p := &sdk.GetStatsParams{}
	if channel != "" {
		p.ChannelId = &channel
	}
	resp, err := c.GetStatsWithResponse(context.Background(), queueID, p)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200
}

// requireStats checks the queue's and the DLQ's visible and in-flight counts.
func requireStats(t *testing.T, c *sdk.ClientWithResponses, queueID string, visible, inFlight, dlqVisible, dlqInFlight int64) {
	t.Helper()
	st := stats(t, c, queueID)
	require.Equal(t, [4]int64{visible, inFlight, dlqVisible, dlqInFlight},
		[4]int64{st.Queue.VisibleMessages, st.Queue.InFlightMessages, st.Dlq.VisibleMessages, st.Dlq.InFlightMessages},
		"stats (visible, in flight, DLQ visible, DLQ in flight)")
}

// storedMessages counts the rows of the messages table (every queue of the test's database when queueID is "").
func storedMessages(t *testing.T, srv *testserver.Server, queueID string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, srv.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM messages WHERE $1 = '' OR queue_no = (SELECT no FROM queues WHERE id = $1)`, queueID).Scan(&n))
	return n
}

// deleteAll acknowledges messages by receipt (in batches of 20) and requires every entry to succeed.
func deleteAll(t *testing.T, c *sdk.ClientWithResponses, queueID string, msgs []sdk.GetMessage, opts ...getOpts) {
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
		require.Zero(t, resp.JSON200.ClientFailedCount+resp.JSON200.ServerFailedCount, string(resp.Body))
	}
}

// putErr publishes a batch that must fail and returns the response.
func putErr(t *testing.T, c *sdk.ClientWithResponses, queueID string, entries ...sdk.PutMessagesDetailsEntry) *sdk.PutMessagesResponse {
	t.Helper()
	resp, err := c.PutMessagesWithResponse(context.Background(), queueID, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: entries})
	require.NoError(t, err)
	require.NotEqual(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp
}

// apiError is the JSON body of every error response.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// requireAPIError checks an error answer: its status, that the body is exactly {"code","message"}, the code, and
// that the message contains each fragment (the offending field, usually).
func requireAPIError(t *testing.T, status int, body []byte, wantStatus int, code string, contains ...string) {
	t.Helper()
	require.Equal(t, wantStatus, status, "body: %s", body)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(body, &fields), "the error body must be JSON: %s", body)
	require.Len(t, fields, 2, "the error body has exactly code and message: %s", body)
	var e apiError
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, code, e.Code, "body: %s", body)
	for _, s := range contains {
		require.Contains(t, e.Message, s, "body: %s", body)
	}
}

// rawResponse is an answer read by raw.
type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// raw sends a request with net/http, for what the SDK cannot send. A string body is sent as JSON.
func raw(t *testing.T, srv *testserver.Server, token, method, path string, body io.Reader) rawResponse {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, body)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.HTTP.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// waitWorkRequest waits until a work request finished (driving the executor too) and returns its status.
func waitWorkRequest(t *testing.T, srv *testserver.Server, c *sdk.ClientWithResponses, id string) sdk.WorkRequestStatus {
	t.Helper()
	var status sdk.WorkRequestStatus
	require.Eventually(t, func() bool {
		srv.Node.Executor().RunOnce(context.Background())
		resp, err := c.GetWorkRequestWithResponse(context.Background(), id, &sdk.GetWorkRequestParams{})
		if err != nil || resp.JSON200 == nil {
			return false
		}
		status = resp.JSON200.Status
		return status == sdk.WorkRequestStatusSUCCEEDED || status == sdk.WorkRequestStatusFAILED || status == sdk.WorkRequestStatusCANCELED
	}, 20*time.Second, 20*time.Millisecond)
	return status
}

// purge starts a purge, checks the 202 with its work request id, and waits for it to succeed.
func purge(t *testing.T, srv *testserver.Server, c *sdk.ClientWithResponses, queueID string, purgeType sdk.PurgeType) {
	t.Helper()
	resp, err := c.PurgeQueueWithResponse(context.Background(), queueID, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: purgeType})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode(), string(resp.Body))
	wr := resp.HTTPResponse.Header.Get("opc-work-request-id")
	require.True(t, strings.HasPrefix(wr, "ocid1.workrequest."), "opc-work-request-id %q", wr)
	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, waitWorkRequest(t, srv, c, wr), "purge %s", purgeType)
}

// withMeta sets a message's metadata.
func withMeta(content string, md sdk.MessageMetadata) sdk.PutMessagesDetailsEntry {
	return sdk.PutMessagesDetailsEntry{Content: content, Metadata: &md}
}

// ids returns the messages' ids.
func ids(msgs []sdk.GetMessage) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Id
	}
	return out
}

// withAttrs is a message with attributes.
func withAttrs(content string, attrs map[string]any) sdk.PutMessagesDetailsEntry {
	if attrs == nil {
		return msg(content)
	}
	a := sdk.MessageAttributes(attrs)
	return sdk.PutMessagesDetailsEntry{Content: content, Attributes: &a}
}

// groupOpts are CreateConsumerGroup settings.
type groupOpts func(*sdk.CreateConsumerGroupDetails)

func groupDisabled() groupOpts {
	return func(d *sdk.CreateConsumerGroupDetails) { f := false; d.IsEnabled = &f }
}
func groupDLQ(n int) groupOpts {
	return func(d *sdk.CreateConsumerGroupDetails) { d.DeadLetterQueueDeliveryCount = &n }
}

// createGroup creates a consumer group and requires the 200 and the etag.
func createGroup(t *testing.T, c *sdk.ClientWithResponses, queueID, name, filter string, opts ...groupOpts) sdk.ConsumerGroup {
	t.Helper()
	d := sdk.CreateConsumerGroupDetails{QueueId: queueID, DisplayName: name}
	if filter != "" {
		d.ConsumerGroupFilter = &filter
	}
	for _, o := range opts {
		o(&d)
	}
	resp, err := c.CreateConsumerGroupWithResponse(context.Background(), &sdk.CreateConsumerGroupParams{}, d)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.NotEmpty(t, resp.HTTPResponse.Header.Get("etag"))
	return *resp.JSON200
}

// updateGroup changes a consumer group and requires the 200.
func updateGroup(t *testing.T, c *sdk.ClientWithResponses, id string, d sdk.UpdateConsumerGroupDetails) sdk.ConsumerGroup {
	t.Helper()
	resp, err := c.UpdateConsumerGroupWithResponse(context.Background(), id, &sdk.UpdateConsumerGroupParams{}, d)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return *resp.JSON200
}

// groupStats reads GET /stats for one consumer group (OCID or displayName).
func groupStats(t *testing.T, c *sdk.ClientWithResponses, queueID, ref string) *sdk.QueueStats {
	t.Helper()
	resp, err := c.GetStatsWithResponse(context.Background(), queueID, &sdk.GetStatsParams{ConsumerGroupId: &ref})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200
}

// contents returns the messages' contents.
func contents(msgs []sdk.GetMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

// runMaintainer runs one maintenance cycle (waiting for the node's own loop to release the lock if it holds it).
func runMaintainer(t *testing.T, srv *testserver.Server) {
	t.Helper()
	require.Eventually(t, func() bool {
		ran, err := srv.Node.Maintainer().RunOnce(context.Background())
		require.NoError(t, err)
		return ran
	}, 10*time.Second, 10*time.Millisecond)
}
