package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// Helpers shared by the IAM end-to-end tests (iam_test.go, iam_matrix_test.go).

// iamEnv is a started server with one tenancy, its administrator, and a way to mint other principals.
type iamEnv struct {
	srv       *testserver.Server
	tenancyID string
	admin     *sdk.ClientWithResponses
	policies  atomic.Int64 // names policies uniquely within the tenancy
}

// iamStart starts a server and creates a tenancy whose administrator sets up resources and policies.
func iamStart(t *testing.T) *iamEnv {
	t.Helper()
	srv := testserver.Start(t)
	tenancyID, admin := srv.Admin(t, "iam-"+strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	return &iamEnv{srv: srv, tenancyID: tenancyID, admin: admin}
}

// token signs a token for subject with groups in the env's tenancy.
func (e *iamEnv) token(t *testing.T, subject string, groups ...string) string {
	t.Helper()
	return e.srv.Token(t, e.tenancyID, subject, groups...)
}

// client is an SDK client for subject with groups in the env's tenancy.
func (e *iamEnv) client(t *testing.T, subject string, groups ...string) *sdk.ClientWithResponses {
	t.Helper()
	return e.srv.Client(t, e.token(t, subject, groups...))
}

// policy creates a policy in compartmentID with the admin client and returns it.
func (e *iamEnv) policy(t *testing.T, compartmentID string, statements ...string) sdk.Policy {
	t.Helper()
	return iamCreatePolicy(t, e.admin, compartmentID, fmt.Sprintf("policy-%d", e.policies.Add(1)), statements...)
}

// iamCreatePolicy creates a policy through client and requires the 200 and its etag.
func iamCreatePolicy(t *testing.T, client *sdk.ClientWithResponses, compartmentID, name string, statements ...string) sdk.Policy {
	t.Helper()
	resp, err := client.CreatePolicyWithResponse(context.Background(), &sdk.CreatePolicyParams{},
		sdk.CreatePolicyDetails{CompartmentId: compartmentID, Name: name, Statements: statements})
	cpRequireStatus(t, resp, err, http.StatusOK)
	require.NotEmpty(t, resp.HTTPResponse.Header.Get("etag"))
	require.Equal(t, statements, resp.JSON200.Statements)
	return *resp.JSON200
}

// iamDeletePolicy deletes a policy with client and requires the 204.
func iamDeletePolicy(t *testing.T, client *sdk.ClientWithResponses, id string) {
	t.Helper()
	resp, err := client.DeletePolicyWithResponse(context.Background(), id, &sdk.DeletePolicyParams{})
	cpRequireStatus(t, resp, err, http.StatusNoContent)
}

// iamRequireDenied checks the answer to a denied request: 404 NotAuthorizedOrNotFound, like a missing resource.
func iamRequireDenied(t *testing.T, status int, body []byte, msgAndArgs ...any) {
	t.Helper()
	if status != http.StatusNotFound {
		what := ""
		if len(msgAndArgs) > 0 {
			what = fmt.Sprintf(fmt.Sprint(msgAndArgs[0]), msgAndArgs[1:]...) + ": "
		}
		require.Failf(t, "want a denial (404)", "%sgot %d %s", what, status, body)
	}
	cpRequireErrorBody(t, body, "NotAuthorizedOrNotFound")
}

// iamCall sends one request with token; a non-nil body is marshalled to JSON.
func iamCall(t *testing.T, srv *testserver.Server, token, method, path string, body any) rawResponse {
	t.Helper()
	if body == nil {
		return raw(t, srv, token, method, path, nil)
	}
	b, err := json.Marshal(body)
	require.NoError(t, err)
	return raw(t, srv, token, method, path, bytes.NewReader(b))
}

// iamPut publishes one message with client and returns the status and body (no requirement on them).
func iamPut(t *testing.T, client *sdk.ClientWithResponses, queueID, content string) (int, []byte) {
	t.Helper()
	resp, err := client.PutMessagesWithResponse(context.Background(), queueID, &sdk.PutMessagesParams{},
		sdk.PutMessagesDetails{Messages: []sdk.PutMessagesDetailsEntry{msg(content)}})
	require.NoError(t, err)
	return resp.StatusCode(), resp.Body
}

// iamGet leases messages with client (no wait) and returns the status and body.
func iamGet(t *testing.T, client *sdk.ClientWithResponses, queueID string, opts ...getOpts) (int, []byte) {
	t.Helper()
	zero := 0
	p := &sdk.GetMessagesParams{TimeoutInSeconds: &zero}
	for _, o := range opts {
		o(p)
	}
	resp, err := client.GetMessagesWithResponse(context.Background(), queueID, p)
	require.NoError(t, err)
	return resp.StatusCode(), resp.Body
}

// iamGetQueue reads a queue with client and returns the status and body.
func iamGetQueue(t *testing.T, client *sdk.ClientWithResponses, queueID string) (int, []byte) {
	t.Helper()
	resp, err := client.GetQueueWithResponse(context.Background(), queueID, &sdk.GetQueueParams{})
	require.NoError(t, err)
	return resp.StatusCode(), resp.Body
}

// iamSimulate asks the policy simulator with client.
func iamSimulate(t *testing.T, client *sdk.ClientWithResponses, d sdk.AuthorizeDetails) *sdk.AuthorizeResponse {
	t.Helper()
	resp, err := client.AuthorizeWithResponse(context.Background(), &sdk.AuthorizeParams{}, d)
	require.NoError(t, err)
	return resp
}
