package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// Client is an SDK client of one principal. The SDK's own calls stay available; the helpers below make one call
// each and require its success. (Helpers that would share a name with an SDK call are named for what they do to
// the resource: NewQueue, not CreateQueue.)
type Client struct {
	*sdk.ClientWithResponses
}

// NewClient is a client of baseURL that sends token as its bearer token (none when empty).
func NewClient(t testing.TB, baseURL, token string) *Client {
	t.Helper()
	c, err := sdk.NewClientWithResponses(baseURL, sdk.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}))
	require.NoError(t, err)
	return &Client{c}
}

// QueueOption is a CreateQueue setting.
type QueueOption func(*sdk.CreateQueueDetails)

// WithDLQ sets deadLetterQueueDeliveryCount.
func WithDLQ(n int) QueueOption {
	return func(d *sdk.CreateQueueDetails) { d.DeadLetterQueueDeliveryCount = &n }
}

// WithVisibility sets the default visibilityInSeconds.
func WithVisibility(n int) QueueOption {
	return func(d *sdk.CreateQueueDetails) { d.VisibilityInSeconds = &n }
}

// WithTimeout sets the default long-poll timeoutInSeconds.
func WithTimeout(n int) QueueOption {
	return func(d *sdk.CreateQueueDetails) { d.TimeoutInSeconds = &n }
}

// WithRetention sets retentionInSeconds.
func WithRetention(n int) QueueOption {
	return func(d *sdk.CreateQueueDetails) { d.RetentionInSeconds = &n }
}

// WithDedup sets deduplicationWindowInSeconds.
func WithDedup(n int) QueueOption {
	return func(d *sdk.CreateQueueDetails) { d.DeduplicationWindowInSeconds = &n }
}

// WithMaxSize sets maxSizeInBytes.
func WithMaxSize(n int64) QueueOption {
	return func(d *sdk.CreateQueueDetails) { d.MaxSizeInBytes = &n }
}

// WithChannelLimit sets channelConsumptionLimit.
func WithChannelLimit(n int) QueueOption {
	return func(d *sdk.CreateQueueDetails) { d.ChannelConsumptionLimit = &n }
}

// WithConsumerGroups creates the queue with the CONSUMER_GROUPS capability (and so its primary group).
func WithConsumerGroups(primaryEnabled bool) QueueOption {
	return func(d *sdk.CreateQueueDetails) {
		d.Capabilities = &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, IsPrimaryConsumerGroupEnabled: &primaryEnabled}}
	}
}

// WithSingleActiveConsumer makes the queue single-active-consumer with the given consumer lease.
func WithSingleActiveConsumer(leaseSeconds int) QueueOption {
	return func(d *sdk.CreateQueueDetails) {
		on := true
		d.IsSingleActiveConsumer, d.ConsumerLeaseInSeconds = &on, &leaseSeconds
	}
}

// NewQueue creates a queue (named after the test) and returns its id.
func (c *Client) NewQueue(t testing.TB, compartmentID string, opts ...QueueOption) string {
	t.Helper()
	d := sdk.CreateQueueDetails{CompartmentId: compartmentID, DisplayName: "q-" + strconv.Itoa(len(t.Name()))}
	for _, o := range opts {
		o(&d)
	}
	resp, err := c.CreateQueueWithResponse(context.Background(), &sdk.CreateQueueParams{}, d)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode(), string(resp.Body))
	return resp.JSON202.Id
}

// NewNamedQueue creates a queue with the default settings, requires its etag, and returns it.
func (c *Client) NewNamedQueue(t testing.TB, compartmentID, name string) sdk.Queue {
	t.Helper()
	resp, err := c.CreateQueueWithResponse(context.Background(), &sdk.CreateQueueParams{},
		sdk.CreateQueueDetails{CompartmentId: compartmentID, DisplayName: name})
	RequireStatus(t, resp, err, http.StatusAccepted)
	require.NotEmpty(t, resp.HTTPResponse.Header.Get("etag"))
	return *resp.JSON202
}

// QueueWithETag reads a queue and its etag.
func (c *Client) QueueWithETag(t testing.TB, id string) (sdk.Queue, string) {
	t.Helper()
	resp, err := c.GetQueueWithResponse(context.Background(), id, &sdk.GetQueueParams{})
	RequireStatus(t, resp, err, http.StatusOK)
	etag := resp.HTTPResponse.Header.Get("etag")
	require.NotEmpty(t, etag)
	return *resp.JSON200, etag
}

// StartQueueDelete deletes a queue, checks the 202, and returns the work request's id.
func (c *Client) StartQueueDelete(t testing.TB, id string) string {
	t.Helper()
	resp, err := c.DeleteQueueWithResponse(context.Background(), id, &sdk.DeleteQueueParams{})
	RequireStatus(t, resp, err, http.StatusAccepted)
	return workRequestID(t, resp.HTTPResponse)
}

// PurgeOption sets a field of a purge's details.
type PurgeOption func(*sdk.PurgeQueueDetails)

// PurgeChannels purges only the messages of these channels.
func PurgeChannels(ids ...string) PurgeOption {
	return func(d *sdk.PurgeQueueDetails) { d.ChannelIds = &ids }
}

// PurgeGroup purges the consumer group ref (an OCID, a displayName, or "all" for every group).
func PurgeGroup(ref string) PurgeOption {
	return func(d *sdk.PurgeQueueDetails) { d.ConsumerGroupId = &ref }
}

// StartPurge starts a purge, checks the 202, and returns the work request's id.
func (c *Client) StartPurge(t testing.TB, queueID string, purgeType sdk.PurgeType, opts ...PurgeOption) string {
	t.Helper()
	d := sdk.PurgeQueueDetails{PurgeType: purgeType}
	for _, o := range opts {
		o(&d)
	}
	resp, err := c.PurgeQueueWithResponse(context.Background(), queueID, &sdk.PurgeQueueParams{}, d)
	RequireStatus(t, resp, err, http.StatusAccepted)
	return workRequestID(t, resp.HTTPResponse)
}

func workRequestID(t testing.TB, resp *http.Response) string {
	t.Helper()
	wr := resp.Header.Get("opc-work-request-id")
	require.True(t, strings.HasPrefix(wr, "ocid1.workrequest."), "opc-work-request-id %q", wr)
	return wr
}

// NewCompartment creates a compartment, requires its etag, and returns it.
func (c *Client) NewCompartment(t testing.TB, parentID, name string) sdk.Compartment {
	t.Helper()
	resp, err := c.CreateCompartmentWithResponse(context.Background(), &sdk.CreateCompartmentParams{},
		sdk.CreateCompartmentDetails{CompartmentId: parentID, Name: name})
	RequireStatus(t, resp, err, http.StatusOK)
	require.NotEmpty(t, resp.HTTPResponse.Header.Get("etag"))
	return *resp.JSON200
}

// CompartmentWithETag reads a compartment and its etag.
func (c *Client) CompartmentWithETag(t testing.TB, id string) (sdk.Compartment, string) {
	t.Helper()
	resp, err := c.GetCompartmentWithResponse(context.Background(), id, &sdk.GetCompartmentParams{})
	RequireStatus(t, resp, err, http.StatusOK)
	etag := resp.HTTPResponse.Header.Get("etag")
	require.NotEmpty(t, etag)
	return *resp.JSON200, etag
}

// QueueIDs lists every page of queues and returns their ids in order.
func (c *Client) QueueIDs(t testing.TB, params sdk.ListQueuesParams) []string {
	t.Helper()
	return allPages(t, func(page *string) ([]string, string) {
		params.Page = page
		resp, err := c.ListQueuesWithResponse(context.Background(), &params)
		RequireStatus(t, resp, err, http.StatusOK)
		ids := make([]string, len(resp.JSON200.Items))
		for i, q := range resp.JSON200.Items {
			ids[i] = q.Id
		}
		return ids, resp.HTTPResponse.Header.Get("opc-next-page")
	})
}

// CompartmentIDs lists every page of compartments and returns their ids in order.
func (c *Client) CompartmentIDs(t testing.TB, params sdk.ListCompartmentsParams) []string {
	t.Helper()
	return allPages(t, func(page *string) ([]string, string) {
		params.Page = page
		resp, err := c.ListCompartmentsWithResponse(context.Background(), &params)
		RequireStatus(t, resp, err, http.StatusOK)
		ids := make([]string, len(resp.JSON200.Items))
		for i, cm := range resp.JSON200.Items {
			ids[i] = cm.Id
		}
		return ids, resp.HTTPResponse.Header.Get("opc-next-page")
	})
}

// allPages calls page with each opc-next-page in turn (nil first) until there is none, and joins the ids.
func allPages(t testing.TB, page func(*string) (ids []string, next string)) []string {
	t.Helper()
	var all []string
	var at *string
	for range 1000 {
		ids, next := page(at)
		all = append(all, ids...)
		if next == "" {
			return all
		}
		at = &next
	}
	t.Fatal("pagination did not end")
	return nil
}

// GroupOption is a CreateConsumerGroup setting.
type GroupOption func(*sdk.CreateConsumerGroupDetails)

// GroupDisabled creates the group disabled.
func GroupDisabled() GroupOption {
	return func(d *sdk.CreateConsumerGroupDetails) { f := false; d.IsEnabled = &f }
}

// GroupDLQ sets the group's deadLetterQueueDeliveryCount.
func GroupDLQ(n int) GroupOption {
	return func(d *sdk.CreateConsumerGroupDetails) { d.DeadLetterQueueDeliveryCount = &n }
}

// NewGroup creates a consumer group, requires the 200 and the etag, and returns it.
func (c *Client) NewGroup(t testing.TB, queueID, name, filter string, opts ...GroupOption) sdk.ConsumerGroup {
	t.Helper()
	d := sdk.CreateConsumerGroupDetails{QueueId: queueID, DisplayName: name}
	if filter != "" {
		d.Filter = &filter
	}
	for _, o := range opts {
		o(&d)
	}
	resp, err := c.CreateConsumerGroupWithResponse(context.Background(), &sdk.CreateConsumerGroupParams{}, d)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode(), string(resp.Body))
	require.NotEmpty(t, resp.HTTPResponse.Header.Get("etag"))
	return *resp.JSON202
}

// ChangeGroup updates a consumer group and requires the 200.
func (c *Client) ChangeGroup(t testing.TB, id string, d sdk.UpdateConsumerGroupDetails) sdk.ConsumerGroup {
	t.Helper()
	resp, err := c.UpdateConsumerGroupWithResponse(context.Background(), id, &sdk.UpdateConsumerGroupParams{}, d)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode(), string(resp.Body))
	return *resp.JSON202
}

// Groups lists a queue's consumer groups with the given parameters (QueueId is set here), requires the 200, and
// returns them with the next page's token.
func (c *Client) Groups(t testing.TB, queueID string, p sdk.ListConsumerGroupsParams) ([]sdk.ConsumerGroup, string) {
	t.Helper()
	p.QueueId = queueID
	resp, err := c.ListConsumerGroupsWithResponse(context.Background(), &p)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200.Items, resp.HTTPResponse.Header.Get("opc-next-page")
}

// NewPolicy creates a policy, requires the 200 and its etag, and returns it.
func (c *Client) NewPolicy(t testing.TB, compartmentID, name string, statements ...string) sdk.Policy {
	t.Helper()
	resp, err := c.CreatePolicyWithResponse(context.Background(), &sdk.CreatePolicyParams{},
		sdk.CreatePolicyDetails{CompartmentId: compartmentID, Name: name, Statements: statements})
	RequireStatus(t, resp, err, http.StatusOK)
	require.NotEmpty(t, resp.HTTPResponse.Header.Get("etag"))
	require.Equal(t, statements, resp.JSON200.Statements)
	return *resp.JSON200
}

// RemovePolicy deletes a policy and requires the 204.
func (c *Client) RemovePolicy(t testing.TB, id string) {
	t.Helper()
	resp, err := c.DeletePolicyWithResponse(context.Background(), id, &sdk.DeletePolicyParams{})
	RequireStatus(t, resp, err, http.StatusNoContent)
}

// Simulate asks the policy simulator (no requirement on the answer).
func (c *Client) Simulate(t testing.TB, d sdk.AuthorizeDetails) *sdk.AuthorizeResponse {
	t.Helper()
	resp, err := c.AuthorizeWithResponse(context.Background(), &sdk.AuthorizeParams{}, d)
	require.NoError(t, err)
	return resp
}

// TryGetQueue reads a queue and returns the status and body (no requirement on them).
func (c *Client) TryGetQueue(t testing.TB, queueID string) (int, []byte) {
	t.Helper()
	resp, err := c.GetQueueWithResponse(context.Background(), queueID, &sdk.GetQueueParams{})
	require.NoError(t, err)
	return resp.StatusCode(), resp.Body
}

// Background keeps the work requests that run in the background (queue deletes and purges): the others record
// changes made at once and are SUCCEEDED from the start.
func Background(list []sdk.WorkRequest) []sdk.WorkRequest {
	var out []sdk.WorkRequest
	for _, w := range list {
		if w.OperationType == sdk.WorkRequestOperationTypeDELETEQUEUE || w.OperationType == sdk.WorkRequestOperationTypePURGEQUEUE {
			out = append(out, w)
		}
	}
	return out
}
