package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// client is the provider's connection to one ferry endpoint: the generated Go SDK over an HTTP client that
// authenticates every request and retries what is safe to retry.
type client struct {
	api *sdk.ClientWithResponses
}

// newClient is a client of endpoint (ferry's base URL) that sends token as its bearer token.
func newClient(endpoint, token, userAgent string) (*client, error) {
	httpClient := &http.Client{Transport: &retryTransport{base: http.DefaultTransport}}
	api, err := sdk.NewClientWithResponses(endpoint, sdk.WithHTTPClient(httpClient),
		sdk.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			r.Header.Set("User-Agent", userAgent)
			return nil
		}))
	if err != nil {
		return nil, err
	}
	return &client{api: api}, nil
}

// retryToken is a fresh opc-retry-token for one create: every retry of that create's request (retryTransport)
// carries the same token, so a request whose answer was lost is answered with the original result instead of
// creating a second resource.
func retryToken() *string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	s := "terraform-" + hex.EncodeToString(b)
	return &s
}

// apiError is an answer other than the one expected: the operation, the HTTP status, the API's error code and
// message (which names the offending field), and the opc-request-id to quote when reporting it.
type apiError struct {
	op        string
	status    int
	code      string
	message   string
	requestID string
}

func (e *apiError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s answered %d", e.op, e.status)
	if e.code != "" {
		fmt.Fprintf(&b, " %s", e.code)
	}
	if e.message != "" {
		fmt.Fprintf(&b, ": %s", e.message)
	}
	if e.requestID != "" {
		fmt.Fprintf(&b, " (opc-request-id: %s)", e.requestID)
	}
	return b.String()
}

// field is the API field the error's message names ("displayName: must be …" names displayName), or "".
func (e *apiError) field() string {
	name, _, ok := strings.Cut(e.message, ":")
	if !ok || strings.ContainsAny(name, " \t") {
		return ""
	}
	// "freeformTags.team", "capabilities[0].type": the attribute is the first segment.
	if i := strings.IndexAny(name, ".["); i >= 0 {
		name = name[:i]
	}
	return name
}

// isStatus reports whether err is an API answer with the given status.
func isStatus(err error, status int) bool {
	var e *apiError
	return errors.As(err, &e) && e.status == status
}

// response is what every generated response offers through methods; its headers are only in its HTTPResponse
// field, which expect reads by reflection so that each call site stays one line.
type response interface {
	StatusCode() int
	GetBody() []byte
}

// expect turns a call's outcome into nil (the wanted status) or an error: the transport's, or an apiError with
// the API's code, message and request id.
func expect(op string, r response, err error, want int) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if r.StatusCode() == want {
		return nil
	}
	e := &apiError{op: op, status: r.StatusCode(), requestID: httpResponse(r).Header.Get("opc-request-id")}
	var body struct{ Code, Message string }
	if json.Unmarshal(r.GetBody(), &body) == nil {
		e.code, e.message = body.Code, body.Message
	} else {
		e.message = strings.TrimSpace(string(r.GetBody()))
	}
	return e
}

// httpResponse is the *http.Response of a generated response (never nil after a call that returned no error).
func httpResponse(r response) *http.Response {
	v := reflect.ValueOf(r)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if hr, ok := v.FieldByName("HTTPResponse").Interface().(*http.Response); ok && hr != nil {
		return hr
	}
	return &http.Response{Header: http.Header{}}
}

// etagOf is the etag a response carries.
func etagOf(r response) string { return httpResponse(r).Header.Get("etag") }

// waitWorkRequest follows a work request until it finishes: nil when it succeeded, an error with the work
// request's own errors when it failed, and a timeout error when ctx ends first. ferry offers no notification of a
// work request's end, so this polls, backing off from 100 ms to 2 s.
func (c *client) waitWorkRequest(ctx context.Context, id string) error {
	interval := 100 * time.Millisecond
	var last *sdk.WorkRequest // the last state read, for the timeout's message
	timedOut := func() error {
		if last == nil {
			return fmt.Errorf("timed out waiting for work request %s: %w", id, ctx.Err())
		}
		return fmt.Errorf("timed out waiting for work request %s (%s, %s, %.0f%% complete): %w",
			id, last.OperationType, last.Status, last.PercentComplete, ctx.Err())
	}
	for {
		resp, err := c.api.GetWorkRequestWithResponse(ctx, id, &sdk.GetWorkRequestParams{})
		if ctx.Err() != nil {
			return timedOut()
		}
		if err := expect("GetWorkRequest", resp, err, http.StatusOK); err != nil {
			return err
		}
		wr := resp.JSON200
		last = wr
		switch wr.Status {
		case sdk.WorkRequestStatusSUCCEEDED:
			return nil
		case sdk.WorkRequestStatusFAILED, sdk.WorkRequestStatusCANCELED:
			return fmt.Errorf("work request %s (%s) %s%s", id, wr.OperationType, wr.Status, c.workRequestErrors(ctx, id))
		}
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return timedOut()
		case <-timer.C:
		}
		interval = min(2*interval, 2*time.Second)
	}
}

// workRequestErrors is the errors a failed work request recorded, as ": CODE: message; …" ("" when none could be
// read: the failure itself is reported either way).
func (c *client) workRequestErrors(ctx context.Context, id string) string {
	resp, err := c.api.ListWorkRequestErrorsWithResponse(ctx, id, &sdk.ListWorkRequestErrorsParams{})
	if expect("ListWorkRequestErrors", resp, err, http.StatusOK) != nil || len(resp.JSON200.Items) == 0 {
		return ""
	}
	var parts []string
	for _, e := range resp.JSON200.Items {
		parts = append(parts, e.Code+": "+e.Message)
	}
	return ": " + strings.Join(parts, "; ")
}

// workRequestID is the opc-work-request-id a 202 answer carries.
func workRequestID(r response) string { return httpResponse(r).Header.Get("opc-work-request-id") }

// retryTransport retries what ferry documents as safe to retry: 429 and 503 answers, which change nothing
// (after retry-after, at most maxRetryWait), and — for reads and for creates that carry an opc-retry-token, which
// the server deduplicates — also lost answers (transport errors, 502, 504). Other writes are sent once: a PUT or
// DELETE whose answer was lost may have been applied, and its if-match would then fail confusingly.
type retryTransport struct {
	base http.RoundTripper
}

const (
	maxAttempts  = 5
	maxRetryWait = 10 * time.Second
)

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	replayable := req.Method == http.MethodGet || req.Header.Get("opc-retry-token") != ""
	wait := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		r := req
		if attempt > 1 { // a RoundTripper must not change its request: resend a copy with a fresh body
			r = req.Clone(req.Context())
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		resp, err := t.base.RoundTrip(r)
		retry := false
		switch {
		case err != nil:
			retry = replayable
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
			retry = true
			if s, perr := strconv.Atoi(resp.Header.Get("retry-after")); perr == nil && s >= 0 {
				wait = min(time.Duration(s)*time.Second, maxRetryWait)
			}
		case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout:
			retry = replayable
		}
		if !retry || attempt == maxAttempts || (req.Body != nil && req.GetBody == nil) {
			return resp, err
		}
		if resp != nil {
			_ = resp.Body.Close()
		}
		timer := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			timer.Stop()
			return nil, req.Context().Err()
		case <-timer.C:
		}
		wait = min(2*wait, maxRetryWait)
	}
}
