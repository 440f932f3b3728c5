// Package console tests the web console (/console) in a real headless Chromium against a real ferry (tests/
// testserver: real router, real PostgreSQL): every scenario signs in with a token and works through the pages as a
// user would, reading what the page shows. The browser tests run one at a time (a Chromium each), not in parallel:
// several at once starve a two-core machine.
package console

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/services/console"
	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// manualMetering: the tests put the counts of the minutes they choose into the metrics (a minute otherwise shows
// 30 s after it ends).
func manualMetering(c *server.Config) { c.Metrics.Manual = true }

// signIn opens the console and signs in with the keyboard only: the labelled token field has the focus, the
// token is typed and Enter submits.
func signIn(t *testing.T, ctx context.Context, baseURL, token string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(baseURL+console.Path))
	waitFor(t, ctx, "the sign-in form", `document.querySelector("label[for=token]")?.innerText === "Token"`)
	waitFor(t, ctx, "the focus on the token field", `document.activeElement?.id === "token" && document.activeElement.tagName === "INPUT"`)
	do(t, ctx, chromedp.KeyEvent(token+kb.Enter))
	waitFor(t, ctx, "the queue list", `document.querySelector("#queues-title") !== null`)
}

// TestConsoleServed: /console answers the embedded bundle with a strict CSP, gzipped when asked, revalidated by
// ETag; an unknown file is a JSON 404; no token is needed to load it.
func TestConsoleServed(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	get := func(path string, headers ...string) *http.Response {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for _, path := range []string{"/console", "/console/"} {
		resp := get(path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "script-src 'self'")
		require.Contains(t, csp, "connect-src 'self'")
		require.NotContains(t, csp, "unsafe-inline")
		require.NotContains(t, csp, "unsafe-eval")
		body, _ := io.ReadAll(resp.Body)
		require.Contains(t, string(body), `<script type="module" src="/console/console.js">`)
		require.NotContains(t, string(body), "<script>", "no inline script")
	}
	js := get("/console/console.js", "Accept-Encoding", "gzip")
	require.Equal(t, http.StatusOK, js.StatusCode)
	require.Equal(t, "gzip", js.Header.Get("Content-Encoding"))
	require.Contains(t, js.Header.Get("Content-Type"), "javascript")
	zr, err := gzip.NewReader(js.Body)
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.NotContains(t, string(plain), "eval(", "the bundle must run under a CSP without unsafe-eval")
	again := get("/console/console.js", "If-None-Match", js.Header.Get("ETag"))
	require.Equal(t, http.StatusNotModified, again.StatusCode)
	missing := get("/console/nope.js")
	require.Equal(t, http.StatusNotFound, missing.StatusCode)
	require.Equal(t, "application/json", missing.Header.Get("Content-Type"))
}

// TestConsoleSignInAndCreateQueue: the sign-in form, the designed empty state of a new tenancy's root compartment,
// creating a queue through the dialog (its work request followed to the end), the queue in the list.
func TestConsoleSignInAndCreateQueue(t *testing.T) {
	srv := testserver.Start(t)
	tenancyID := srv.Tenancy(t, "console-create")
	ctx := newTab(t)
	do(t, ctx, chromedp.Navigate(srv.URL+console.Path))
	waitFor(t, ctx, "the sign-in form", `document.querySelector("#token") !== null`)
	screenshot(t, ctx, "signin")

	// A malformed token is refused before any call, with the reason next to the field.
	fill(t, ctx, "#token", "not-a-token")
	click(t, ctx, "form", "Sign in")
	waitText(t, ctx, ".field-error", "three parts")

	fill(t, ctx, "#token", "")
	signIn(t, ctx, srv.URL, srv.AdminToken(t, tenancyID))
	waitText(t, ctx, ".empty", "No queues in this compartment yet")
	require.False(t, eval[bool](t, ctx, `location.href.includes("eyJ")`), "the token must never be in the URL")
	require.True(t, eval[bool](t, ctx, `sessionStorage.getItem("ferry.token")?.startsWith("eyJ") === true`))

	click(t, ctx, ".empty", "Create your first queue")
	waitFor(t, ctx, "the create dialog", `document.querySelector("dialog[open] #q-name") !== null`)
	fill(t, ctx, "#q-name", "orders")
	fill(t, ctx, "#q-dlq", "3")
	click(t, ctx, "dialog", "Create")
	waitFor(t, ctx, "the dialog to close", `document.querySelector("dialog[open]") === null`)
	waitText(t, ctx, "table[aria-label=Queues]", "orders")
	waitText(t, ctx, "table[aria-label=Queues]", "ACTIVE")
	ids := srv.AdminOf(t, tenancyID).QueueIDs(t, sdkListQueues(tenancyID))
	require.Len(t, ids, 1, "the console created exactly one queue")

	// The compartment tree shows the root and a child compartment made through the API.
	child := srv.AdminOf(t, tenancyID).NewCompartment(t, tenancyID, "team-a")
	do(t, ctx, chromedp.Reload())
	waitText(t, ctx, "nav.tree", "team-a")
	screenshot(t, ctx, "queues")
	click(t, ctx, "nav.tree", "team-a")
	waitText(t, ctx, ".content", child.Id)
	waitText(t, ctx, ".empty", "No queues in this compartment yet")
}

// TestConsoleQueueLifecycle: edit a queue, purge it and delete it through the dialogs (Escape closes one without
// doing anything); the API sees each change.
func TestConsoleQueueLifecycle(t *testing.T) {
	srv, tenancyID, admin := testserver.StartAdmin(t)
	queueID := admin.NewNamedQueue(t, tenancyID, "lifecycle").Id
	admin.Put(t, queueID, e2e.Msg("a"), e2e.Msg("b"), e2e.Msg("c"))
	ctx := newTab(t)
	signIn(t, ctx, srv.URL, srv.AdminToken(t, tenancyID))
	waitFor(t, ctx, "a depth of 3", `document.querySelector("table[aria-label=Queues] tbody tr")?.innerText.includes("ACTIVE\t3\t")`)

	click(t, ctx, "table[aria-label=Queues]", "Edit lifecycle")
	waitFor(t, ctx, "the edit dialog", `document.querySelector("dialog[open] #q-name")?.value === "lifecycle"`)
	fill(t, ctx, "#q-name", "lifecycle-2")
	fill(t, ctx, "#q-visibility", "45")
	click(t, ctx, "dialog", "Save")
	waitText(t, ctx, "table[aria-label=Queues]", "lifecycle-2")
	q, _ := admin.QueueWithETag(t, queueID)
	require.Equal(t, "lifecycle-2", q.DisplayName)
	require.Equal(t, 45, q.VisibilityInSeconds)

	click(t, ctx, "table[aria-label=Queues]", "Purge lifecycle-2")
	waitFor(t, ctx, "the purge dialog", `document.querySelector("dialog[open] input[name=purgeType]") !== null`)
	click(t, ctx, "dialog", "Purge")
	waitFor(t, ctx, "the dialog to close", `document.querySelector("dialog[open]") === null`)
	waitFor(t, ctx, "a depth of 0", `document.querySelector("table[aria-label=Queues] tbody tr")?.innerText.includes("ACTIVE\t0\t")`)
	require.Empty(t, admin.Get(t, queueID, e2e.Timeout(0)))

	click(t, ctx, "table[aria-label=Queues]", "Delete lifecycle-2")
	waitFor(t, ctx, "the delete dialog", `document.querySelector("dialog[open] #q-confirm") !== null`)
	do(t, ctx, chromedp.KeyEvent(kb.Escape))
	waitFor(t, ctx, "Escape to close it", `document.querySelector("dialog") === null`)
	click(t, ctx, "table[aria-label=Queues]", "Delete lifecycle-2")
	waitFor(t, ctx, "the delete dialog", `document.querySelector("dialog[open] #q-confirm") !== null`)
	require.True(t, eval[bool](t, ctx, `[...document.querySelectorAll("dialog button")].find(b => b.innerText === "Delete").disabled`),
		"deleting needs the queue's name typed")
	fill(t, ctx, "#q-confirm", "lifecycle-2")
	click(t, ctx, "dialog", "Delete")
	waitText(t, ctx, ".empty", "No queues in this compartment yet")
	q, _ = admin.QueueWithETag(t, queueID)
	require.Equal(t, "DELETED", string(q.LifecycleState))
}

// TestConsoleMessagesAndCharts: send a message with attributes, poll it (attributes, delivery count, receipt),
// delete it; the charts then show it published, delivered and acknowledged.
func TestConsoleMessagesAndCharts(t *testing.T) {
	srv, tenancyID, admin := testserver.StartAdmin(t, manualMetering)
	queueID := admin.NewQueue(t, tenancyID, e2e.WithDLQ(2), e2e.WithConsumerGroups(true))
	ctx := newTab(t)
	signIn(t, ctx, srv.URL, srv.AdminToken(t, tenancyID))
	do(t, ctx, chromedp.Navigate(srv.URL+console.Path+"#/queues/"+queueID+"/messages"))
	waitFor(t, ctx, "the send form", `document.querySelector("#send-content") !== null`)

	fill(t, ctx, "#send-content", "hello from the console")
	fill(t, ctx, "#send-attributes", "type=order\namount=42")
	click(t, ctx, "form[aria-labelledby=send-title]", "Send")
	waitText(t, ctx, ".ok", "Sent message")

	click(t, ctx, "form[aria-labelledby=poll-title]", "Poll")
	waitText(t, ctx, "table[aria-label='Polled messages']", "hello from the console")
	row := eval[string](t, ctx, `document.querySelector("table[aria-label='Polled messages'] tbody tr").innerText`)
	require.Contains(t, row, `type="order"`)
	require.Contains(t, row, "amount=42")
	require.Regexp(t, `\t1\t`, row, "delivery count 1")
	screenshot(t, ctx, "messages")
	click(t, ctx, "table[aria-label='Polled messages']", "Delete message "+eval[string](t, ctx,
		`document.querySelector("table[aria-label='Polled messages'] tbody tr").dataset.messageId`))
	waitText(t, ctx, "table[aria-label='Polled messages']", "deleted")
	require.Empty(t, admin.Get(t, queueID, e2e.Timeout(0)), "the console deleted the message")

	// The minute just past receives this node's counts; the charts read them (their refresh, or the button).
	minute := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Minute)
	require.NoError(t, srv.Node.Metering().Flush(context.Background(), minute))
	require.NoError(t, srv.Node.Metering().Sample(context.Background(), minute))
	do(t, ctx, chromedp.Navigate(srv.URL+console.Path+"#/queues/"+queueID+"/overview"))
	waitFor(t, ctx, "the charts", `document.querySelector(".chart") !== null`)
	click(t, ctx, ".toolbar", "Refresh")
	for _, series := range []string{"published", "delivered", "acknowledged"} {
		waitFor(t, ctx, series+" = 1 in the chart",
			fmt.Sprintf(`document.querySelector(".legend-item[data-series=%s]")?.dataset.value === "1"`, series))
	}
	require.True(t, eval[bool](t, ctx, `document.querySelectorAll(".chart polyline").length >= 3`), "the series are drawn")
	screenshot(t, ctx, "queue-charts")
}

// TestConsoleConsumerGroupFilter: the filter editor validates as you type (an error for a broken filter, which of
// the sample attribute sets a valid one matches); creating the group lists it; its filter is edited and it is
// deleted.
func TestConsoleConsumerGroupFilter(t *testing.T) {
	srv, tenancyID, admin := testserver.StartAdmin(t)
	queueID := admin.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	ctx := newTab(t)
	signIn(t, ctx, srv.URL, srv.AdminToken(t, tenancyID))
	do(t, ctx, chromedp.Navigate(srv.URL+console.Path+"#/queues/"+queueID+"/groups"))
	waitFor(t, ctx, "the filter editor", `document.querySelector("#group-filter") !== null`)

	fill(t, ctx, "#group-name", "big-orders")
	fill(t, ctx, "#group-filter", `:type = "order" AND`)
	waitFor(t, ctx, "the filter to be refused", `document.querySelector("#group-filter").getAttribute("aria-invalid") === "true"`)
	require.NotEmpty(t, eval[string](t, ctx, `document.querySelector("#filter-status").innerText`))
	require.True(t, eval[bool](t, ctx, `document.querySelector("dialog[open]") === null && [...document.querySelectorAll("button")].find(b => b.innerText === "Create group").disabled`))

	fill(t, ctx, "#group-filter", `:type = "order" AND :amount > 100`)
	waitText(t, ctx, "#filter-status", "Valid filter.")
	verdicts := eval[[]string](t, ctx, `[...document.querySelectorAll(".samples .verdict")].map(e => e.innerText)`)
	require.Equal(t, []string{"matches", "no match", "no match"}, verdicts)
	screenshot(t, ctx, "consumer-groups")

	click(t, ctx, "form[aria-labelledby=group-title]", "Create group")
	waitText(t, ctx, "table[aria-label='Consumer groups']", "big-orders")
	waitText(t, ctx, "table[aria-label='Consumer groups']", ":amount > 100")
	groupFilter := func(name string) (string, bool) {
		groups, _ := admin.Groups(t, queueID, sdkListGroups())
		for _, g := range groups {
			if g.DisplayName == name && g.LifecycleState != "DELETED" {
				return g.Filter, true
			}
		}
		return "", false
	}
	f, ok := groupFilter("big-orders")
	require.True(t, ok)
	require.Equal(t, `:type = "order" AND :amount > 100`, f)

	// Edit the filter: the samples are checked again as it changes.
	click(t, ctx, "table[aria-label='Consumer groups']", "Edit big-orders")
	waitFor(t, ctx, "the edit form", `document.querySelector("#group-filter").value.includes(":amount > 100")`)
	fill(t, ctx, "#group-filter", `:type = "refund"`)
	waitFor(t, ctx, "the samples checked again", `[...document.querySelectorAll(".samples .verdict")].map(e => e.innerText).join() === "no match,no match,matches"`)
	click(t, ctx, "form[aria-labelledby=group-title]", "Save group")
	waitText(t, ctx, "table[aria-label='Consumer groups']", `:type = "refund"`)
	f, _ = groupFilter("big-orders")
	require.Equal(t, `:type = "refund"`, f)

	// Delete it (the confirmation answered yes).
	eval[bool](t, ctx, `(window.confirm = () => true, true)`)
	click(t, ctx, "table[aria-label='Consumer groups']", "Delete big-orders")
	waitFor(t, ctx, "the group to go", `![...document.querySelectorAll("table[aria-label='Consumer groups'] th")].some(e => e.innerText === "big-orders")`)
	_, ok = groupFilter("big-orders")
	require.False(t, ok, "deleted through the console")
}

// TestConsoleDeadLetterAndRedrive: a message delivered past the queue's dead-letter count (polled and released in
// the console), and one a watch consumer acknowledged negatively, are in the DLQ tab with their delivery counts
// and the last negative code and reason; "redrive all" moves both back, where they are delivered again.
func TestConsoleDeadLetterAndRedrive(t *testing.T) {
	srv, tenancyID, admin := testserver.StartAdmin(t)
	queueID := admin.NewQueue(t, tenancyID, e2e.WithDLQ(1))
	admin.Put(t, queueID, e2e.WithAttrs("poison", map[string]any{"kind": "bad"}))
	ctx := newTab(t)
	signIn(t, ctx, srv.URL, srv.AdminToken(t, tenancyID))
	do(t, ctx, chromedp.Navigate(srv.URL+console.Path+"#/queues/"+queueID+"/messages"))

	// Delivered once and released: the next delivery would be the second, past the count of 1.
	click(t, ctx, "form[aria-labelledby=poll-title]", "Poll")
	waitText(t, ctx, "table[aria-label='Polled messages']", "poison")
	click(t, ctx, "table[aria-label='Polled messages']", "Release message "+eval[string](t, ctx,
		`document.querySelector("table[aria-label='Polled messages'] tbody tr").dataset.messageId`))
	waitText(t, ctx, "table[aria-label='Polled messages']", "released")
	click(t, ctx, "form[aria-labelledby=poll-title]", "Poll")
	waitText(t, ctx, ".empty", "No messages to deliver")

	// A push consumer refuses the second message with a code and a reason.
	admin.Put(t, queueID, e2e.Msg("refused"))
	w := e2e.Watch(t, srv.URL, srv.AdminToken(t, tenancyID), queueID, sdk.WatchOptions{Window: 1})
	m := e2e.Receive(t, w, 1, 10*time.Second)[0]
	errs, err := w.Negative(context.Background(), "Timeout.Db", "db down", m.Receipt)
	require.NoError(t, err)
	require.Empty(t, errs)
	require.Eventually(t, func() bool { return admin.Stats(t, queueID).Dlq.VisibleMessages == 2 }, 10*time.Second, 50*time.Millisecond)

	do(t, ctx, chromedp.Navigate(srv.URL+console.Path+"#/queues/"+queueID+"/dlq"))
	waitFor(t, ctx, "the DLQ tab", `document.querySelector("#dlq-visibility") !== null`)
	waitFor(t, ctx, "the DLQ tile", `[...document.querySelectorAll(".tile")].some(e => e.innerText.startsWith("In the DLQ") && e.innerText.endsWith("2"))`)
	require.Equal(t, "0", eval[string](t, ctx, `document.querySelector("#dlq-visibility").value`), "browsing holds nothing by default")
	click(t, ctx, "form[aria-labelledby=dlq-title]", "Browse")
	waitText(t, ctx, "table[aria-label='Dead letters']", "poison")
	waitText(t, ctx, "table[aria-label='Dead letters']", "Timeout.Db: db down")
	screenshot(t, ctx, "dead-letters")

	click(t, ctx, "form[aria-labelledby=redrive-title]", "Redrive")
	waitText(t, ctx, "form[aria-labelledby=redrive-title] .ok", "Redrove 2 messages back to the queue.")
	require.Zero(t, admin.Stats(t, queueID).Dlq.VisibleMessages)
	contents := []string{}
	for _, m := range e2e.Receive(t, w, 1, 10*time.Second) {
		contents = append(contents, m.Content)
	}
	for _, m := range admin.Get(t, queueID, e2e.Timeout(0)) {
		contents = append(contents, m.Content)
	}
	require.ElementsMatch(t, []string{"poison", "refused"}, contents, "both are delivered again")
}

// TestConsolePoliciesAndSimulator: a policy with a broken statement shows the parse error at that statement; the
// fixed policy is saved; the simulator allows a member of the group (naming the statement) and denies others.
func TestConsolePoliciesAndSimulator(t *testing.T) {
	srv, tenancyID, admin := testserver.StartAdmin(t)
	admin.NewNamedQueue(t, tenancyID, "payments")
	ctx := newTab(t)
	signIn(t, ctx, srv.URL, srv.AdminToken(t, tenancyID))
	do(t, ctx, chromedp.Navigate(srv.URL+console.Path+"#/policies"))
	waitFor(t, ctx, "the policies page", `document.querySelector("#policies-title") !== null`)

	click(t, ctx, ".page-head", "Create policy")
	fill(t, ctx, "#policy-name", "readers")
	fill(t, ctx, "#policy-statements", "Allow group Readers to read queues in tenancy\nAllow group Readers to fly queues in tenancy")
	click(t, ctx, "form[aria-labelledby=policy-edit-title]", "Save policy")
	waitText(t, ctx, ".statement-error", "Statement 2")
	waitText(t, ctx, ".error", "InvalidParameter")
	screenshot(t, ctx, "policy-error")

	fill(t, ctx, "#policy-statements", "Allow group Readers to read queues in tenancy")
	click(t, ctx, "form[aria-labelledby=policy-edit-title]", "Save policy")
	waitText(t, ctx, ".statements", "Allow group Readers to read queues in tenancy")

	fill(t, ctx, "#sim-subject", "alice")
	fill(t, ctx, "#sim-groups", "Readers")
	fill(t, ctx, "#sim-permission", "QUEUE_READ")
	waitFor(t, ctx, "the queue in the simulator", `[...document.querySelectorAll("#sim-queue option")].some(o => o.innerText === "payments")`)
	fill(t, ctx, "#sim-queue", eval[string](t, ctx, `[...document.querySelectorAll("#sim-queue option")].find(o => o.innerText === "payments").value`))
	click(t, ctx, "form[aria-labelledby=sim-title]", "Simulate")
	waitText(t, ctx, ".verdict-box.allow", "Allowed")
	waitText(t, ctx, ".verdict-box.allow", "Allow group Readers to read queues in tenancy")
	screenshot(t, ctx, "policies")

	fill(t, ctx, "#sim-groups", "Writers")
	click(t, ctx, "form[aria-labelledby=sim-title]", "Simulate")
	waitText(t, ctx, ".verdict-box.deny", "Denied")
}

// TestConsoleExpiredTokenSignsOut: when the API answers 401 (here: a token that expired), the console forgets the
// token and shows the sign-in form with the reason.
func TestConsoleExpiredTokenSignsOut(t *testing.T) {
	srv := testserver.Start(t)
	tenancyID := srv.Tenancy(t, "console-expired")
	expired, err := iam.IssueHS256(srv.Secret, tenancyID, "admin", []string{"Administrators"}, -10*time.Minute)
	require.NoError(t, err)
	ctx := newTab(t)
	do(t, ctx, chromedp.Navigate(srv.URL+console.Path))
	waitFor(t, ctx, "the sign-in form", `document.querySelector("#token") !== null`)
	// As if the token had expired while the tab was open: it is in sessionStorage when the page loads.
	eval[bool](t, ctx, fmt.Sprintf(`(sessionStorage.setItem("ferry.token", %s), true)`, js(expired)))
	do(t, ctx, chromedp.Reload())
	waitText(t, ctx, ".notice", "Your session ended")
	waitText(t, ctx, ".notice", "NotAuthenticated")
	require.True(t, eval[bool](t, ctx, `document.querySelector("#token") !== null && sessionStorage.getItem("ferry.token") === null`))
}

// TestConsoleQueuePageFirstPaint: a queue page, loaded fresh with a session, paints in under a second and shows
// the queue's name soon after (the budget is for a loaded two-core machine; the figures are logged).
func TestConsoleQueuePageFirstPaint(t *testing.T) {
	srv, tenancyID, admin := testserver.StartAdmin(t)
	queueID := admin.NewQueue(t, tenancyID)
	ctx := newTab(t)
	signIn(t, ctx, srv.URL, srv.AdminToken(t, tenancyID))
	best := map[string]float64{"fcp": 1e9, "title": 1e9}
	for range 3 { // the best of three loads: one slow load on a busy machine is not the console's doing
		do(t, ctx, chromedp.Navigate("about:blank"))
		do(t, ctx, chromedp.Navigate(srv.URL+console.Path+"#/queues/"+queueID))
		waitFor(t, ctx, "the queue's name", `document.querySelector("#queue-title") !== null`)
		title := eval[float64](t, ctx, `performance.now()`)
		fcp := eval[float64](t, ctx, `new Promise(r => { const e = performance.getEntriesByName("first-contentful-paint")[0];
			if (e) r(e.startTime); else new PerformanceObserver(l => r(l.getEntries()[0].startTime)).observe({type: "paint", buffered: true}) })`)
		best["fcp"] = min(best["fcp"], fcp)
		best["title"] = min(best["title"], title)
	}
	t.Logf("queue page: first contentful paint %.0f ms, queue name shown by %.0f ms (best of 3)", best["fcp"], best["title"])
	require.Less(t, best["fcp"], 1000.0, "first paint of a queue page")
	require.Less(t, best["title"], 3000.0, "the queue page's data")
	// The page's own numbers are there too.
	require.True(t, strings.Contains(eval[string](t, ctx, `document.querySelector(".tiles").innerText`), "Visible"))
}

// TestConsoleConsumers: the live table of a single-active-consumer queue shows the active consumer holding its
// message and the standby; "Disconnect" removes the active one, whose message becomes visible again.
func TestConsoleConsumers(t *testing.T) {
	srv, tenancyID, admin := testserver.StartAdmin(t)
	queueID := admin.NewQueue(t, tenancyID, e2e.WithSingleActiveConsumer(60))
	admin.Put(t, queueID, e2e.Msg("held"))
	require.Len(t, admin.Get(t, queueID, e2e.As("worker-1"), e2e.Timeout(0)), 1)
	require.Empty(t, admin.Get(t, queueID, e2e.As("worker-2"), e2e.Timeout(0)))
	ctx := newTab(t)
	signIn(t, ctx, srv.URL, srv.AdminToken(t, tenancyID))
	do(t, ctx, chromedp.Navigate(srv.URL+console.Path+"#/queues/"+queueID+"/consumers"))
	waitText(t, ctx, "table[aria-label=Consumers]", "worker-2")
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll("table[aria-label=Consumers] tbody tr")].map(r => r.innerText)`)
	require.Len(t, rows, 2)
	require.Regexp(t, `^worker-1\tprimary\tPOLL\tRUNNING\t1\t`, rows[0])
	require.Regexp(t, `^worker-2\tprimary\tPOLL\tSTANDBY\t0\t`, rows[1])
	screenshot(t, ctx, "consumers")

	click(t, ctx, "table[aria-label=Consumers]", "Disconnect worker-1")
	waitFor(t, ctx, "worker-1 to leave", `[...document.querySelectorAll("table[aria-label=Consumers] tbody tr")]
		.some(r => r.innerText.startsWith("worker-1\tprimary\tPOLL\tEXIT"))`)
	waitText(t, ctx, "table[aria-label=Consumers]", "RUNNING")
	got := admin.Get(t, queueID, e2e.As("worker-2"), e2e.Timeout(0))
	require.Len(t, got, 1, "the disconnected consumer's message goes to the standby")
	require.Equal(t, "held", got[0].Content)
}
