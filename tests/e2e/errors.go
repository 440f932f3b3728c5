package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Response is what every generated SDK response offers.
type Response interface {
	StatusCode() int
	GetBody() []byte
}

// APIError is the JSON body of every error response.
type APIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Ptr returns a pointer to v (the SDK's optional fields).
func Ptr[T any](v T) *T { return &v }

// RequireStatus fails unless the call succeeded with the wanted status.
func RequireStatus(t testing.TB, resp Response, err error, status int) {
	t.Helper()
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode(), "body: %s", resp.GetBody())
}

// RequireError checks an error response: its status, the JSON body's code, and that the message contains each
// of the given fragments (the offending field's name, usually).
func RequireError(t testing.TB, resp Response, err error, status int, code string, contains ...string) APIError {
	t.Helper()
	RequireStatus(t, resp, err, status)
	return RequireErrorBody(t, resp.GetBody(), code, contains...)
}

// RequireErrorBody checks that body is a {"code","message"} error with the given code and message fragments.
func RequireErrorBody(t testing.TB, body []byte, code string, contains ...string) APIError {
	t.Helper()
	var e APIError
	require.NoError(t, json.Unmarshal(body, &e), "the error body must be JSON: %s", body)
	require.Equal(t, code, e.Code, "body: %s", body)
	require.NotEmpty(t, e.Message, "body: %s", body)
	for _, s := range contains {
		require.Contains(t, e.Message, s, "body: %s", body)
	}
	return e
}

// RequireAPIError checks an error answer: its status, that the body is exactly {"code","message"}, the code, and
// that the message contains each fragment (the offending field, usually).
func RequireAPIError(t testing.TB, status int, body []byte, wantStatus int, code string, contains ...string) {
	t.Helper()
	require.Equal(t, wantStatus, status, "body: %s", body)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(body, &fields), "the error body must be JSON: %s", body)
	require.Len(t, fields, 2, "the error body has exactly code and message: %s", body)
	var e APIError
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, code, e.Code, "body: %s", body)
	for _, s := range contains {
		require.Contains(t, e.Message, s, "body: %s", body)
	}
}

// RequireDenied checks the answer to a denied request: 404 NotAuthorizedOrNotFound, like a missing resource.
func RequireDenied(t testing.TB, status int, body []byte, msgAndArgs ...any) {
	t.Helper()
	if status != http.StatusNotFound {
		what := ""
		if len(msgAndArgs) > 0 {
			what = fmt.Sprintf(fmt.Sprint(msgAndArgs[0]), msgAndArgs[1:]...) + ": "
		}
		require.Failf(t, "want a denial (404)", "%sgot %d %s", what, status, body)
	}
	RequireErrorBody(t, body, "NotAuthorizedOrNotFound")
}

// Body is a response's body for failure messages ("" when the request failed and left no response).
func Body[T interface{ GetBody() []byte }](r *T) string {
	if r == nil {
		return ""
	}
	return string((*r).GetBody())
}
