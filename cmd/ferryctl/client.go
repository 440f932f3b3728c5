package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// api returns the SDK client of this invocation, resolving the configuration on first use (so that commands
// that call nothing, such as config and completion, need no token).
func (a *app) api() (*sdk.ClientWithResponses, error) {
	if a.client != nil {
		return a.client, nil
	}
	s, err := a.resolve()
	if err != nil {
		return nil, err
	}
	c, err := sdk.NewClientWithResponses(s.endpoint, sdk.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("User-Agent", "ferryctl/"+version)
		return nil
	}))
	if err != nil {
		return nil, usagef("endpoint %q: %v", s.endpoint, err)
	}
	a.client, a.conf = c, s
	return c, nil
}

// defaultCompartment is the compartment an omitted --compartment-id means: the token's tenancy.
func (a *app) defaultCompartment(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	if _, err := a.api(); err != nil {
		return "", err
	}
	if t := tenancyOf(a.conf.token); t != "" {
		return t, nil
	}
	return "", usagef("--compartment-id is required: the token names no tenancy to default to")
}

// call sends one request with this invocation's client (resolving it first, as api does).
func (a *app) call(send func(c *sdk.ClientWithResponses) (*reply, error)) (*reply, error) {
	c, err := a.api()
	if err != nil {
		return nil, err
	}
	return send(c)
}

// show sends one request and prints its answer with v.
func (a *app) show(v view, send func(c *sdk.ClientWithResponses) (*reply, error)) error {
	r, err := a.call(send)
	if err != nil {
		return err
	}
	return a.emit(v, r.body)
}

// reply is an answer of ferry: its status, headers and body as returned.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// apiError is an error answer of the API: {"code","message"} and the request's opc-request-id.
type apiError struct {
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"opc-request-id,omitempty"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s (opc-request-id %s)", e.Status, e.Code, e.Message, e.RequestID)
}

func (a *app) printAPIError(e *apiError) {
	if a.output == "table" {
		fmt.Fprintf(a.stderr, "Error: %s (%d): %s\nopc-request-id: %s\n", e.Code, e.Status, e.Message, e.RequestID)
		return
	}
	out, _ := json.MarshalIndent(e, "", "  ")
	fmt.Fprintf(a.stderr, "%s\n", out)
}

// sdkResponse is what every generated *…Response has in common as methods; their Body and HTTPResponse fields
// are read by reflection in check, since oapi-codegen gives them no interface.
type sdkResponse interface{ StatusCode() int }

// check turns a generated response into a reply, or into an *apiError when ferry answered an error.
func check[R sdkResponse](r R, err error) (*reply, error) {
	if err != nil {
		return nil, err
	}
	v := reflect.ValueOf(r).Elem()
	hr, _ := v.FieldByName("HTTPResponse").Interface().(*http.Response)
	rep := &reply{status: r.StatusCode(), body: v.FieldByName("Body").Bytes()}
	if hr != nil {
		rep.header = hr.Header
	}
	if rep.status >= 200 && rep.status < 300 {
		return rep, nil
	}
	e := &apiError{Status: rep.status, RequestID: rep.header.Get("opc-request-id")}
	if json.Unmarshal(rep.body, e) != nil || e.Code == "" {
		e.Code = http.StatusText(rep.status)
		e.Message = strings.TrimSpace(string(rep.body))
	}
	return nil, e
}

// pageFunc fetches one page of a list with c (page nil: the first).
type pageFunc func(ctx context.Context, c *sdk.ClientWithResponses, page *string) (*reply, error)

// list prints the page of a list that lf names (--page), or with --all every page merged into one {"items":[…]}.
func (a *app) list(ctx context.Context, v view, lf *listFlags, fetch pageFunc) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	page := lf.pageParam()
	if !lf.all {
		r, err := fetch(ctx, c, page)
		if err != nil {
			return err
		}
		if next := r.header.Get("opc-next-page"); next != "" {
			defer fmt.Fprintf(a.stderr, "opc-next-page: %s (more with --page %[1]s, or --all)\n", next)
		}
		return a.emit(v, r.body)
	}
	var merged struct {
		Items []json.RawMessage `json:"items"`
	}
	merged.Items = []json.RawMessage{}
	for {
		r, err := fetch(ctx, c, page)
		if err != nil {
			return err
		}
		var one struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(r.body, &one); err != nil {
			return fmt.Errorf("reading a page: %w", err)
		}
		merged.Items = append(merged.Items, one.Items...)
		next := r.header.Get("opc-next-page")
		if next == "" {
			break
		}
		page = &next
	}
	body, err := json.Marshal(merged)
	if err != nil {
		return err
	}
	return a.emit(v, body)
}

// accepted prints the answer of a change that answered 202 with a work request. A create, update or move
// answers the resource, printed as it is (after its work request finished, with wait). A delete or a purge
// answers no body and runs in the background: its work request is printed instead (its final state with wait).
func (a *app) accepted(ctx context.Context, r *reply, v view, wait bool) error {
	id := r.header.Get("opc-work-request-id")
	if id == "" {
		return a.emit(v, r.body)
	}
	if len(r.body) == 0 {
		var wr *reply
		var err error
		if wait {
			wr, err = a.waitWorkRequest(ctx, id)
		} else {
			wr, err = a.getWorkRequest(ctx, id)
		}
		if err != nil {
			return err
		}
		return a.emit(workRequestView, wr.body)
	}
	if wait {
		if _, err := a.waitWorkRequest(ctx, id); err != nil {
			return err
		}
	}
	return a.emit(v, r.body)
}

// submit sends one change and prints what accepted prints for it.
func (a *app) submit(ctx context.Context, v view, wait bool, send func(c *sdk.ClientWithResponses) (*reply, error)) error {
	r, err := a.call(send)
	if err != nil {
		return err
	}
	return a.accepted(ctx, r, v, wait)
}

func (a *app) getWorkRequest(ctx context.Context, id string) (*reply, error) {
	return a.call(func(c *sdk.ClientWithResponses) (*reply, error) {
		return check(c.GetWorkRequestWithResponse(ctx, id, &sdk.GetWorkRequestParams{}))
	})
}

// workRequestError is a work request that ended FAILED or CANCELED, or that did not end in time.
type workRequestError struct {
	id, status string
	errors     []sdk.WorkRequestError
}

func (e *workRequestError) Error() string {
	if e.status == "" {
		return fmt.Sprintf("work request %s did not finish within --wait-timeout", e.id)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "work request %s %s", e.id, e.status)
	for _, we := range e.errors {
		fmt.Fprintf(&b, "\n  %s: %s", we.Code, we.Message)
	}
	return b.String()
}

// waitWorkRequest polls a work request until it ends, backing off from 100 ms to 2 s between polls.
func (a *app) waitWorkRequest(ctx context.Context, id string) (*reply, error) {
	ctx, cancel := context.WithTimeout(ctx, a.waitTimeout)
	defer cancel()
	delay := 100 * time.Millisecond
	for {
		r, err := a.getWorkRequest(ctx, id)
		if ctx.Err() == context.DeadlineExceeded {
			return nil, &workRequestError{id: id}
		}
		if err != nil {
			return nil, err
		}
		var wr sdk.WorkRequest
		if err := json.Unmarshal(r.body, &wr); err != nil {
			return nil, fmt.Errorf("reading work request %s: %w", id, err)
		}
		switch wr.Status {
		case sdk.WorkRequestStatusSUCCEEDED:
			return r, nil
		case sdk.WorkRequestStatusFAILED, sdk.WorkRequestStatusCANCELED:
			e := &workRequestError{id: id, status: string(wr.Status)}
			if errs, err := check(a.client.ListWorkRequestErrorsWithResponse(ctx, id, &sdk.ListWorkRequestErrorsParams{})); err == nil {
				var coll sdk.WorkRequestErrorCollection
				if json.Unmarshal(errs.body, &coll) == nil {
					e.errors = coll.Items
				}
			}
			return nil, e
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return nil, &workRequestError{id: id}
			}
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}
