package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// Helpers shared by the control-plane end-to-end tests. They carry a cp prefix so that they do not collide with
// the data-plane tests that live in the same package.

// cpResponse is what every generated SDK response offers.
type cpResponse interface {
	StatusCode() int
	GetBody() []byte
}

// cpAPIError is the JSON body of every error response.
type cpAPIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// cpStart starts a server and creates a tenancy with an administrator client.
func cpStart(t *testing.T) (srv *testserver.Server, tenancyID string, client *sdk.ClientWithResponses) {
	t.Helper()
	srv = testserver.Start(t)
	tenancyID, client = srv.Admin(t, "tenancy-"+strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	return srv, tenancyID, client
}

func cpPtr[T any](v T) *T { return &v }

// cpRequireStatus fails unless the call succeeded with the wanted status.
func cpRequireStatus(t *testing.T, resp cpResponse, err error, status int) {
	t.Helper()
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode(), "body: %s", resp.GetBody())
}

// cpRequireError checks an error response: its status, the JSON body's code, and that the message contains each
// of the given fragments (the offending field's name, usually).
func cpRequireError(t *testing.T, resp cpResponse, err error, status int, code string, contains ...string) cpAPIError {
	t.Helper()
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode(), "body: %s", resp.GetBody())
	return cpRequireErrorBody(t, resp.GetBody(), code, contains...)
}

// cpRequireErrorBody checks that body is a {"code","message"} error with the given code and message fragments.
func cpRequireErrorBody(t *testing.T, body []byte, code string, contains ...string) cpAPIError {
	t.Helper()
	var e cpAPIError
	require.NoError(t, json.Unmarshal(body, &e), "the error body must be JSON: %s", body)
	require.Equal(t, code, e.Code, "body: %s", body)
	require.NotEmpty(t, e.Message, "body: %s", body)
	for _, s := range contains {
		require.Contains(t, e.Message, s, "body: %s", body)
	}
	return e
}

// cpCreateCompartment creates a compartment and returns it.
func cpCreateCompartment(t *testing.T, client *sdk.ClientWithResponses, parentID, name string) sdk.Compartment {
	t.Helper()
	resp, err := client.CreateCompartmentWithResponse(context.Background(), &sdk.CreateCompartmentParams{},
		sdk.CreateCompartmentDetails{CompartmentId: parentID, Name: name})
	cpRequireStatus(t, resp, err, http.StatusOK)
	require.NotEmpty(t, resp.HTTPResponse.Header.Get("etag"))
	return *resp.JSON200
}

// cpCreateQueue creates a queue with the default settings and returns it.
func cpCreateQueue(t *testing.T, client *sdk.ClientWithResponses, compartmentID, name string) sdk.Queue {
	t.Helper()
	resp, err := client.CreateQueueWithResponse(context.Background(), &sdk.CreateQueueParams{},
		sdk.CreateQueueDetails{CompartmentId: compartmentID, DisplayName: name})
	cpRequireStatus(t, resp, err, http.StatusOK)
	require.NotEmpty(t, resp.HTTPResponse.Header.Get("etag"))
	return *resp.JSON200
}

// cpGetQueue reads a queue and its etag.
func cpGetQueue(t *testing.T, client *sdk.ClientWithResponses, id string) (sdk.Queue, string) {
	t.Helper()
	resp, err := client.GetQueueWithResponse(context.Background(), id, &sdk.GetQueueParams{})
	cpRequireStatus(t, resp, err, http.StatusOK)
	etag := resp.HTTPResponse.Header.Get("etag")
	require.NotEmpty(t, etag)
	return *resp.JSON200, etag
}

// cpGetCompartment reads a compartment and its etag.
func cpGetCompartment(t *testing.T, client *sdk.ClientWithResponses, id string) (sdk.Compartment, string) {
	t.Helper()
	resp, err := client.GetCompartmentWithResponse(context.Background(), id, &sdk.GetCompartmentParams{})
	cpRequireStatus(t, resp, err, http.StatusOK)
	etag := resp.HTTPResponse.Header.Get("etag")
	require.NotEmpty(t, etag)
	return *resp.JSON200, etag
}

// cpDeleteQueue deletes a queue, checks the 202 and returns the work request id.
func cpDeleteQueue(t *testing.T, client *sdk.ClientWithResponses, id string) string {
	t.Helper()
	resp, err := client.DeleteQueueWithResponse(context.Background(), id, &sdk.DeleteQueueParams{})
	cpRequireStatus(t, resp, err, http.StatusAccepted)
	wr := resp.HTTPResponse.Header.Get("opc-work-request-id")
	require.True(t, strings.HasPrefix(wr, "ocid1.workrequest."), "opc-work-request-id %q", wr)
	return wr
}

// cpWaitWorkRequest drives the executor and waits until the work request has finished, then returns it.
func cpWaitWorkRequest(t *testing.T, srv *testserver.Server, client *sdk.ClientWithResponses, id string) sdk.WorkRequest {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.GetWorkRequestWithResponse(ctx, id, &sdk.GetWorkRequestParams{})
		cpRequireStatus(t, resp, err, http.StatusOK)
		switch resp.JSON200.Status {
		case sdk.WorkRequestStatusSUCCEEDED, sdk.WorkRequestStatusFAILED, sdk.WorkRequestStatusCANCELED:
			return *resp.JSON200
		}
		require.True(t, time.Now().Before(deadline), "work request %s is still %s", id, resp.JSON200.Status)
		// The background executor was woken when the request was accepted; running one here too only speeds
		// things up (claims use SKIP LOCKED, so the two never execute the same request).
		if !srv.Node.Executor().RunOnce(ctx) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// cpQueueIDs lists every page of queues and returns their ids in order.
func cpQueueIDs(t *testing.T, client *sdk.ClientWithResponses, params sdk.ListQueuesParams) []string {
	t.Helper()
	var ids []string
	for range 1000 {
		resp, err := client.ListQueuesWithResponse(context.Background(), &params)
		cpRequireStatus(t, resp, err, http.StatusOK)
		for _, q := range resp.JSON200.Items {
			ids = append(ids, q.Id)
		}
		next := resp.HTTPResponse.Header.Get("opc-next-page")
		if next == "" {
			return ids
		}
		params.Page = &next
	}
	t.Fatal("pagination did not end")
	return nil
}

// cpCompartmentIDs lists every page of compartments and returns their ids in order.
func cpCompartmentIDs(t *testing.T, client *sdk.ClientWithResponses, params sdk.ListCompartmentsParams) []string {
	t.Helper()
	var ids []string
	for range 1000 {
		resp, err := client.ListCompartmentsWithResponse(context.Background(), &params)
		cpRequireStatus(t, resp, err, http.StatusOK)
		for _, c := range resp.JSON200.Items {
			ids = append(ids, c.Id)
		}
		next := resp.HTTPResponse.Header.Get("opc-next-page")
		if next == "" {
			return ids
		}
		params.Page = &next
	}
	t.Fatal("pagination did not end")
	return nil
}

// cpRawResponse is a response read by cpRaw.
type cpRawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// cpRaw sends a request with net/http, for what the SDK cannot send (malformed bodies, wrong types, bad headers).
// An empty token sends no Authorization header; headers are name/value pairs.
func cpRaw(t *testing.T, srv *testserver.Server, token, method, path, contentType string, body io.Reader, headers ...string) cpRawResponse {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, body)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.HTTP.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return cpRawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}
