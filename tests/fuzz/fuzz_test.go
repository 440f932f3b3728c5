package fuzz

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/persistence/testdb"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// durationDefault bounds the run in make test; make fuzz sets FERRY_FUZZ_DURATION longer.
const durationDefault = 5 * time.Second

// TestFuzzAPI sends generated requests to every operation of the spec for FERRY_FUZZ_DURATION (5 s by default)
// from a few concurrent workers, and fails on any 5xx or transport error (a panic answers 500: Recover), listing
// each distinct failure with a request that reproduces it. FERRY_FUZZ_SEED replays a run's requests (the
// interleaving of the workers aside).
func TestFuzzAPI(t *testing.T) {
	duration := durationDefault
	if v := os.Getenv("FERRY_FUZZ_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "FERRY_FUZZ_DURATION")
		duration = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("FERRY_FUZZ_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "FERRY_FUZZ_SEED")
		seed = s
	}
	t.Logf("seed %d (FERRY_FUZZ_SEED=%d replays it), duration %s", seed, seed, duration)

	srv, tenancyID, admin := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	fix := fixtures(t, srv, admin, tenancyID)
	watchQueue := admin.NewQueue(t, tenancyID) // not among the fixtures: the generated requests would delete it
	spec, err := api.GetSwagger()
	require.NoError(t, err)
	ops := Operations(spec)

	const workers = 4
	var (
		sent     atomic.Int64
		mu       sync.Mutex
		statuses = map[int]int{}
		failures = map[string]string{} // "op status message" → a request that gave it
		wg       sync.WaitGroup
	)
	client := &http.Client{Timeout: 40 * time.Second, Transport: srv.HTTP.Client().Transport}
	deadline := time.Now().Add(duration)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := &Generator{R: rand.New(rand.NewPCG(seed, uint64(w))), Fix: fix}
			for time.Now().Before(deadline) {
				req := g.Next(ops[g.R.IntN(len(ops))])
				status, body, err := send(client, srv.URL, token, g, req)
				sent.Add(1)
				mu.Lock()
				statuses[status]++
				if err != nil || status >= 500 {
					key := fmt.Sprintf("%s %d %.200s%v", req.Op, status, body, err)
					if _, seen := failures[key]; !seen {
						failures[key] = req.String()
					}
				}
				mu.Unlock()
			}
		}()
	}
	var watchFrames int
	var watchFailures []string
	wg.Add(1)
	go func() { // the watch's own protocol: frames over a WebSocket
		defer wg.Done()
		watchFrames, watchFailures = fuzzWatch(srv.URL, token, watchQueue, seed, nil, deadline)
	}()
	wg.Wait()
	for _, f := range watchFailures {
		failures[f] = "(a watch frame)"
	}

	codes := make([]int, 0, len(statuses))
	for c := range statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var summary []string
	for _, c := range codes {
		summary = append(summary, fmt.Sprintf("%d×%d", c, statuses[c]))
	}
	t.Logf("%d requests to %d operations and %d watch frames in %s: %s; %d distinct failures", sent.Load(), len(ops),
		watchFrames, duration, strings.Join(summary, " "), len(failures))
	for key, req := range failures {
		t.Errorf("5xx or transport error: %s\n  request: %s", key, req)
	}
	require.Equal(t, http.StatusOK, srv.Raw(t, "", http.MethodGet, "/readyz", "", nil).Status, "the server is still ready")
}

// send sends one request: with the admin token usually, sometimes with none, a broken one or two.
func send(client *http.Client, base, token string, g *Generator, r Request) (int, []byte, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
		if g.chance(0.05) {
			body = io.MultiReader(body) // chunked: no Content-Length
		}
	}
	req, err := http.NewRequestWithContext(context.Background(), r.Method, base+r.Path, body)
	if err != nil {
		return 0, nil, nil // a path the client refuses to send is not a server failure
	}
	req.Header = r.Header.Clone()
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	switch x := g.R.IntN(100); {
	case x < 93:
		req.Header.Set("Authorization", "Bearer "+token)
	case x < 95:
	case x < 97:
		req.Header.Add("Authorization", "Bearer "+token)
		req.Header.Add("Authorization", "Bearer "+token)
	default:
		req.Header.Set("Authorization", "Bearer "+g.pick([]string{"x", "a.b.c", token[:len(token)/2], token + "\xff", strings.Repeat("t", 9000)}))
	}
	resp, err := client.Do(req)
	if err != nil {
		if strings.Contains(err.Error(), "invalid header field") || strings.Contains(err.Error(), "invalid URL") {
			return 0, nil, nil // refused by the client itself
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// fixtures creates the resources the requests name: a compartment, queues (one with a DLQ), a consumer group,
// a policy, messages and a leased message's receipt, and a work request.
func fixtures(t *testing.T, srv *testserver.Server, admin *e2e.Client, tenancyID string) Fixtures {
	comp := admin.NewCompartment(t, tenancyID, "fuzz")
	q1 := admin.NewQueue(t, comp.Id, e2e.WithDLQ(3), e2e.WithConsumerGroups(true))
	q2 := admin.NewQueue(t, tenancyID)
	group := admin.NewGroup(t, q1, "fuzz-group", `:ch = "x"`)
	policy := admin.NewPolicy(t, comp.Id, "fuzz-policy", "Allow group Fuzzers to read queues in compartment fuzz")
	admin.Put(t, q1, e2e.MsgOn("one", "ch-1"), e2e.MsgOn("two", "ch-2"), e2e.Msg("three"))
	leased := admin.Get(t, q1, e2e.Visibility(3600), e2e.Limit(2))
	require.NotEmpty(t, leased)
	receipts := make([]string, len(leased))
	for i, m := range leased {
		receipts[i] = m.Receipt
	}
	wrs, err := admin.ListWorkRequestsWithResponse(t.Context(), &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID)})
	require.NoError(t, err)
	var workRequests []string
	if wrs.JSON200 != nil {
		for _, w := range wrs.JSON200.Items {
			workRequests = append(workRequests, w.Id)
		}
	}
	if len(workRequests) == 0 {
		workRequests = []string{"ocid1.workrequest.ferry.local." + strings.Repeat("a", 32)}
	}
	return Fixtures{IDs: map[string][]string{
		"queueId":         {q1, q2},
		"compartmentId":   {tenancyID, comp.Id},
		"consumerGroupId": {group.Id},
		"policyId":        {policy.Id},
		"workRequestId":   workRequests,
		"messageReceipt":  receipts,
		"receipt":         receipts,
		"channelId":       {"ch-1", "ch-2"},
		"channelFilter":   {"ch-*", "ch-1"},
		"consumerId":      {"consumer-1"},
		"filter":          {"attributes.kind = 'a'", "channelId = 'ch-1'"},
		"if-match":        {"*"},
	}, Values: map[string][]any{
		"statements": {
			[]string{"Allow group Fuzzers to manage queues in compartment fuzz"},
			[]string{"Allow group Fuzzers to use queue-push in tenancy where target.queue.id = '" + q1 + "'"},
			[]string{"Allow any-user to read queues in compartment id " + comp.Id + " where request.principal.type = 'é\u00e9'"},
			[]string{"Allow group 'Fuzz ✉' to { QUEUE_READ, QUEUE_UPDATE } in tenancy"},
		},
		"filter":           {"attributes.kind = 'a' AND attributes.n > 1e300", ":ch IN ('a', 'é')", "attributes.x EXISTS", "NOT (attributes.n <= -9223372036854775808)"},
		"attributes":       {map[string]any{"kind": "a", "n": 1.7976931348623157e308}, map[string]any{"é": "✉"}},
		"customProperties": {map[string]any{"k": "v"}},
		"channelIds":       {[]string{"ch-1", ""}, []string{"é"}},
	}}
}
