package provider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
)

// proxy is an endpoint in front of the test's server that hands every request to hook first; hook returns true
// when it answered the request itself. It counts the requests it saw.
func (a *acc) proxy(hook func(w http.ResponseWriter, r *http.Request) bool) (endpoint string, requests *atomic.Int64) {
	target, err := url.Parse(a.srv.URL)
	require.NoError(a.t, err)
	forward := httputil.NewSingleHostReverseProxy(target)
	requests = &atomic.Int64{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if hook == nil || !hook(w, r) {
			forward.ServeHTTP(w, r)
		}
	}))
	a.t.Cleanup(hs.Close)
	return hs.URL, requests
}

// TestAccValidation: values out of the API's ranges, lengths and patterns fail at plan time, before any call;
// what only the server can check (a filter's syntax) fails at apply time on the attribute, with the API's code,
// message and request id.
func TestAccValidation(t *testing.T) {
	a := newAcc(t)
	endpoint, requests := a.proxy(nil)
	planFails := func(body, want string) resource.TestStep {
		return resource.TestStep{Config: providerConfig(endpoint, a.token) + body, PlanOnly: true, ExpectError: regexp.MustCompile(want)}
	}
	queue := func(setting string) string {
		return `resource "ferry_queue" "q" {
  compartment_id = "` + a.tenancy + `"
  display_name   = "q"
  ` + setting + `
}`
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		Steps: []resource.TestStep{
			planFails(queue("visibility_in_seconds = 43201"), `(?s)visibility_in_seconds.*between 0 and 43200, got: 43201`),
			planFails(queue("consumer_lease_in_seconds = 4"), `(?s)consumer_lease_in_seconds.*between 5 and 300`),
			planFails(queue("max_size_in_bytes = 1024"), `(?s)max_size_in_bytes.*between 1048576 and 1099511627776`),
			planFails(`resource "ferry_queue" "q" {
  compartment_id = "not-an-ocid"
  display_name   = "q"
}`, `(?s)compartment_id.*must match`),
			planFails(`resource "ferry_compartment" "c" {
  compartment_id = "`+a.tenancy+`"
  name           = "no spaces allowed"
}`, `(?s)name.*must match`),
			planFails(`resource "ferry_policy" "p" {
  compartment_id = "`+a.tenancy+`"
  name           = "empty"
  statements     = []
}`, `(?s)statements.*at least 1`),
			planFails(`resource "ferry_consumer_group" "g" {
  queue_id     = "`+a.tenancy+`"
  display_name = "g"
  dead_letter_queue_delivery_count = 1001
}`, `(?s)dead_letter_queue_delivery_count.*between 0 and 1000`),
		},
	})
	require.Zero(t, requests.Load(), "a plan that fails validation must not call the API")

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		Steps: []resource.TestStep{{
			Config: a.config(`
resource "ferry_queue" "q" {
  compartment_id          = %q
  display_name            = "q"
  consumer_groups_enabled = true
}
resource "ferry_consumer_group" "g" {
  queue_id     = ferry_queue.q.id
  display_name = "g"
  filter       = ":team = "
}`, a.tenancy),
			ExpectError: regexp.MustCompile(`(?s)filter\s+= ":team = ".*CreateConsumerGroup answered 400 InvalidParameter:\s+filter:.*opc-request-id:`),
		}},
	})
}

// TestAccPermission: a token whose principal holds no permission is refused with ferry's 404 and an explanation;
// a token ferry does not accept, with 401.
func TestAccPermission(t *testing.T) {
	a := newAcc(t)
	nobody := a.srv.Token(t, a.tenancy, "nobody", "Nobody")
	compartment := `
resource "ferry_compartment" "c" {
  compartment_id = "` + a.tenancy + `"
  name           = "denied"
}`
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		Steps: []resource.TestStep{
			{
				Config:      providerConfig(a.srv.URL, nobody) + compartment,
				ExpectError: regexp.MustCompile(`(?s)Cannot create the compartment.*CreateCompartment answered 404\s+NotAuthorizedOrNotFound.*opc-request-id:.*policies`),
			},
			{
				Config:      providerConfig(a.srv.URL, "not-a-token") + compartment,
				ExpectError: regexp.MustCompile(`(?s)answered 401\s+NotAuthenticated.*token`),
			},
		},
	})
}

// TestAccConflict: a queue changed outside Terraform between the read and the update is not overwritten: the
// update carries the etag Terraform read, ferry answers 412, and the error says why; the next apply, which reads
// the queue again, makes the change.
func TestAccConflict(t *testing.T) {
	a := newAcc(t)
	var armed atomic.Bool
	endpoint, _ := a.proxy(func(_ http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/20210201/queues/") && armed.CompareAndSwap(true, false) {
			id := strings.TrimPrefix(r.URL.Path, "/20210201/queues/")
			resp, err := a.admin.UpdateQueueWithResponse(context.Background(), id, &sdk.UpdateQueueParams{},
				sdk.UpdateQueueDetails{VisibilityInSeconds: e2e.Ptr(77)})
			e2e.RequireStatus(t, resp, err, http.StatusAccepted)
		}
		return false
	})
	queue := func(visibility int) string {
		return providerConfig(endpoint, a.token) + `
resource "ferry_queue" "q" {
  compartment_id        = "` + a.tenancy + `"
  display_name          = "q"
  visibility_in_seconds = ` + strconv.Itoa(visibility) + `
}`
	}
	var id string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		Steps: []resource.TestStep{
			{Config: queue(60), Check: withID("ferry_queue.q", func(got string) error { id = got; return nil })},
			{
				PreConfig:   func() { armed.Store(true) },
				Config:      queue(90),
				ExpectError: regexp.MustCompile(`(?s)UpdateQueue answered 412 NoEtagMatch.*opc-request-id.*changed\s+outside\s+Terraform`),
			},
			{
				PreConfig: func() {
					require.Equal(t, 77, a.queue(id).VisibilityInSeconds, "the change made outside Terraform stays")
				},
				Config: queue(90),
				Check:  resource.TestCheckResourceAttr("ferry_queue.q", "visibility_in_seconds", "90"),
			},
		},
	})
}

// TestAccRetryToken: a create whose answer is lost is retried with the same opc-retry-token, and ferry answers
// the retry with the queue it created the first time: one queue, not two.
func TestAccRetryToken(t *testing.T) {
	a := newAcc(t)
	var mu sync.Mutex
	var tokens []string
	target, err := url.Parse(a.srv.URL)
	require.NoError(t, err)
	forward := httputil.NewSingleHostReverseProxy(target)
	endpoint, _ := a.proxy(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost || r.URL.Path != "/20210201/queues" {
			return false
		}
		mu.Lock()
		tokens = append(tokens, r.Header.Get("opc-retry-token"))
		first := len(tokens) == 1
		mu.Unlock()
		if !first {
			return false
		}
		forward.ServeHTTP(httptest.NewRecorder(), r) // the queue is created; its answer is lost on the way back
		w.WriteHeader(http.StatusBadGateway)
		return true
	})
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		Steps: []resource.TestStep{{
			Config: providerConfig(endpoint, a.token) + `
resource "ferry_queue" "q" {
  compartment_id = "` + a.tenancy + `"
  display_name   = "once"
}`,
			Check: withID("ferry_queue.q", func(id string) error {
				queues := a.admin.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: &a.tenancy})
				require.Equal(t, []string{id}, queues, "one queue, the one in the state")
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, tokens, 2)
				require.NotEmpty(t, tokens[0])
				require.Equal(t, tokens[0], tokens[1], "the retry carries the first request's token")
				return nil
			}),
		}},
	})
}
