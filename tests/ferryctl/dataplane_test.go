package ferryctl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/tests/testserver"
)

// messages is a GetMessages or PutMessages answer's messages.
func messages(t *testing.T, doc map[string]any) []map[string]any {
	t.Helper()
	list, _ := doc["messages"].([]any)
	out := make([]map[string]any, len(list))
	for i, m := range list {
		out[i] = m.(map[string]any)
	}
	return out
}

func contents(t *testing.T, doc map[string]any) []string {
	t.Helper()
	var out []string
	for _, m := range messages(t, doc) {
		out = append(out, m["content"].(string))
	}
	return out
}

// queueStats is a queue's visible and in-flight messages (of its primary group, or the DLQ's).
func (e *env) queueStats(q string, of string) (visible, inFlight float64) {
	e.t.Helper()
	s := e.json("queue", "stats", q)[of].(map[string]any)
	return s["visibleMessages"].(float64), s["inFlightMessages"].(float64)
}

func testMessages(t *testing.T, bin string) {
	e := newEnv(t, bin)
	q := e.queue("inbox")
	file := filepath.Join(t.TempDir(), "order.json")
	require.NoError(t, os.WriteFile(file, []byte("{\"order\": 1}\n"), 0o600))

	// Arguments, stdin's lines ("-", empty lines skipped) and a file, in that order, with shared metadata.
	put := decode(t, e.okIn("line 1\n\nline 2\r\n", "message", "put", "--queue-id", q, "first", "-", "--file", file,
		"--custom-properties", "source=cli"))
	require.Len(t, messages(t, put), 4)
	got := e.json("message", "get", "--queue-id", q, "--limit", "10", "--timeout-in-seconds", "0", "--visibility-in-seconds", "60")
	require.Equal(t, []string{"first", "line 1", "line 2", "{\"order\": 1}\n"}, contents(t, got))
	ms := messages(t, got)
	require.Equal(t, map[string]any{"customProperties": map[string]any{"source": "cli"}}, ms[0]["metadata"])
	receipt := func(i int) string { return ms[i]["receipt"].(string) }

	// One receipt: UpdateMessage, which answers the message's id and visibility.
	released := e.json("message", "update", "--queue-id", q, "--visibility-in-seconds", "0", receipt(0))
	require.Equal(t, ms[0]["id"], released["id"])
	require.Contains(t, released, "visibleAfter")
	// More, from stdin: UpdateMessages, with a result per entry.
	extended := decode(t, e.okIn(receipt(1)+"\n"+receipt(2)+"\n", "message", "update", "--queue-id", q, "--visibility-in-seconds", "120", "-"))
	require.EqualValues(t, 0, extended["clientFailures"])
	require.Len(t, extended["entries"], 2)

	// One receipt: DeleteMessage (204, nothing printed); more: DeleteMessages.
	require.Empty(t, e.ok("message", "delete", "--queue-id", q, receipt(3)))
	deleted := e.json("message", "delete", "--queue-id", q, receipt(1), receipt(2))
	require.EqualValues(t, 0, deleted["clientFailures"])
	require.Equal(t, []any{map[string]any{}, map[string]any{}}, deleted["entries"])

	// The released message is delivered again; its first receipt is stale now: that entry fails, exit 1.
	again := e.json("message", "get", "--queue-id", q, "--timeout-in-seconds", "0")
	require.Equal(t, []string{"first"}, contents(t, again))
	require.EqualValues(t, 2, messages(t, again)[0]["deliveryCount"])
	current := messages(t, again)[0]["receipt"].(string)
	e.ok("message", "put", "--queue-id", q, "another")
	another := strings.TrimSpace(e.ok("message", "get", "--queue-id", q, "--timeout-in-seconds", "0", "--query", "messages[].receipt"))
	r := e.run("", "message", "delete", "--queue-id", q, receipt(0), another)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "1 of 2 entries failed")
	batch := decode(t, r.stdout)
	require.EqualValues(t, 1, batch["clientFailures"])
	require.EqualValues(t, 409, batch["entries"].([]any)[0].(map[string]any)["errorCode"])
	require.Empty(t, e.ok("message", "delete", "--queue-id", q, current))
	v, inFlight := e.queueStats(q, "queue")
	require.Zero(t, v+inFlight, "every message was acknowledged")

	// Metadata: a delayed message is not visible yet; --query picks fields.
	e.ok("message", "put", "--queue-id", q, "--delay-in-seconds", "600", "--message-group-id", "g", "--traceparent",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "--deduplication-id", "d1", "later")
	require.Empty(t, e.ok("message", "get", "--queue-id", q, "--timeout-in-seconds", "0", "--query", "messages[].id"))
	e.ok("message", "put", "--queue-id", q, "--channel-id", "eu", "now")
	require.Equal(t, "now\n", e.ok("message", "get", "--queue-id", q, "--timeout-in-seconds", "0", "--channel-filter", "e*", "--query", "messages[].content"))
}

// testPutBatching counts the PutMessages calls behind a proxy: stdin's lines go 20 to a call (or --batch-size),
// fewer when 20 would pass the request size limit, and a refused batch stops the put after the accepted ones.
func testPutBatching(t *testing.T, bin string) {
	srv, tenancyID, admin := testserver.StartAdmin(t)
	var mu sync.Mutex
	var batches []int
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages") {
			body, _ := io.ReadAll(r.Body)
			var d struct {
				Messages []json.RawMessage `json:"messages"`
			}
			_ = json.Unmarshal(body, &d)
			mu.Lock()
			batches = append(batches, len(d.Messages))
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	e := newEnvOf(t, bin, srv, tenancyID, admin)
	e.vars["FERRY_ENDPOINT"] = front.URL
	sent := func() []int {
		mu.Lock()
		defer mu.Unlock()
		out := batches
		batches = nil
		return out
	}
	q := e.queue("batched")
	sent()

	var lines strings.Builder
	for i := range 45 {
		lines.WriteString(strings.Repeat("x", i+1) + "\n")
	}
	put := decode(t, e.okIn(lines.String(), "message", "put", "--queue-id", q, "-"))
	require.Equal(t, []int{20, 20, 5}, sent())
	ids := messages(t, put)
	require.Len(t, ids, 45, "the answers of the three calls, as one")
	for i := 1; i < len(ids); i++ {
		require.Greater(t, ids[i]["id"].(float64), ids[i-1]["id"].(float64), "in order")
	}

	e.okIn("a\nb\nc\nd\ne\n", "message", "put", "--queue-id", q, "--batch-size", "2", "-")
	require.Equal(t, []int{2, 2, 1}, sent())

	// Twenty messages of 200 KiB do not fit one 2 MiB request: ten do.
	big := strings.Repeat("b", 200<<10) + "\n"
	put = decode(t, e.okIn(strings.Repeat(big, 20), "message", "put", "--queue-id", q, "-"))
	require.Len(t, messages(t, put), 20)
	require.Equal(t, []int{10, 10}, sent())

	// The 21st message is too large: the first batch is put, the second refused whole.
	r := e.run(strings.Repeat("ok\n", 20)+strings.Repeat("x", 300<<10)+"\n", "message", "put", "--queue-id", q, "-")
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, []int{20, 1}, sent())
	require.Len(t, messages(t, decode(t, r.stdout)), 20, "what was put is printed")
	require.Contains(t, r.stderr, "20 messages were put before the failure")
	require.Contains(t, r.stderr, `"code": "InvalidParameter"`)
}

func testDeadLetters(t *testing.T, bin string) {
	e := newEnv(t, bin)
	q := e.queue("fragile", "--dead-letter-queue-delivery-count", "1")
	e.ok("message", "put", "--queue-id", q, "poison", "also")
	require.Len(t, messages(t, e.json("message", "get", "--queue-id", q, "--limit", "2", "--visibility-in-seconds", "0", "--timeout-in-seconds", "0")), 2)
	// A second delivery would pass the count: the messages move to the DLQ instead.
	require.Eventually(t, func() bool {
		e.ok("message", "get", "--queue-id", q, "--limit", "2", "--timeout-in-seconds", "0")
		v, _ := e.queueStats(q, "dlq")
		return v == 2
	}, 10*time.Second, 50*time.Millisecond)

	dead := e.json("dlq", "get", "--queue-id", q, "--limit", "2", "--timeout-in-seconds", "0", "--visibility-in-seconds", "60")
	require.ElementsMatch(t, []string{"poison", "also"}, contents(t, dead))
	receipt := messages(t, dead)[0]["receipt"].(string)
	require.Empty(t, e.ok("message", "delete", "--queue-id", q, "--dlq", receipt))
	other := messages(t, dead)[1]["receipt"].(string)
	e.ok("message", "update", "--queue-id", q, "--dlq", "--visibility-in-seconds", "0", other)

	require.EqualValues(t, 1, e.json("dlq", "redrive", "--queue-id", q, "--limit", "10")["redrivenMessages"])
	visible, _ := e.queueStats(q, "queue")
	require.EqualValues(t, 1, visible)
	dlqVisible, _ := e.queueStats(q, "dlq")
	require.Zero(t, dlqVisible)
}

// testConsumers: a single active consumer, the consumers list, and consumer leave handing over to the standby.
func testConsumers(t *testing.T, bin string) {
	e := newEnv(t, bin)
	q := e.queue("sac", "--is-single-active-consumer", "--consumer-lease-in-seconds", "30")
	e.ok("message", "put", "--queue-id", q, "one", "two")
	get := func(consumer string) []string {
		return contents(t, e.json("message", "get", "--queue-id", q, "--consumer-id", consumer, "--timeout-in-seconds", "0", "--visibility-in-seconds", "60"))
	}
	require.Equal(t, []string{"one"}, get("c1"))
	require.Empty(t, get("c2"), "c2 is a standby")
	consumers := map[string]any{}
	for _, c := range items(t, e.json("queue", "consumers", q)) {
		consumers[c["id"].(string)] = c["status"]
	}
	require.Equal(t, map[string]any{"c1": "RUNNING", "c2": "STANDBY"}, consumers)

	require.Empty(t, e.ok("consumer", "leave", "--queue-id", q, "c1"))
	require.Eventually(t, func() bool { return first(get("c2")) == "one" }, 10*time.Second, 50*time.Millisecond,
		"the standby takes over, the leaver's unacknowledged message first")
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func lines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		docs = append(docs, decode(t, l))
	}
	return docs
}

func testWatch(t *testing.T, bin string) {
	e := newEnv(t, bin)
	q := e.queue("pushed")
	e.ok("message", "put", "--queue-id", q, "m1", "m2", "m3", "m4", "m5")

	var got []string
	for _, m := range lines(t, e.ok("message", "watch", "--queue-id", q, "--max-messages", "3")) {
		got = append(got, m["content"].(string))
		require.NotEmpty(t, m["receipt"])
	}
	require.Equal(t, []string{"m1", "m2", "m3"}, got)
	visible, inFlight := e.queueStats(q, "queue")
	require.Equal(t, []float64{2, 0}, []float64{visible, inFlight}, "three acknowledged, what was pushed beyond them released")

	out := e.ok("message", "watch", "--queue-id", q, "--max-messages", "2", "--query", "content", "--window", "2")
	require.Equal(t, "m4\nm5\n", out)
	visible, inFlight = e.queueStats(q, "queue")
	require.Zero(t, visible+inFlight)

	e.ok("message", "put", "--queue-id", q, "x1", "x2")
	require.Len(t, lines(t, e.ok("message", "watch", "--queue-id", q, "--no-ack", "--max-messages", "2")), 2)
	visible, _ = e.queueStats(q, "queue")
	require.EqualValues(t, 2, visible, "--no-ack leaves the messages in the queue")

	e.fails(2, "message", "watch", "--queue-id", q, "-o", "table")
	r := e.fails(1, "message", "watch", "--queue-id", "ocid1.queue.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	require.Contains(t, r.stderr, "NotAuthorizedOrNotFound")
}

// testWatchInterrupted stops watches with SIGINT: the exit status is 0, the lines written were acknowledged
// (or, with --no-ack, everything is released).
func testWatchInterrupted(t *testing.T, bin string) {
	e := newEnv(t, bin)
	q := e.queue("interrupted")
	watchUntil := func(n int, flags ...string) []string {
		cmd := e.command(append([]string{"message", "watch", "--queue-id", q}, flags...)...)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		killer := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() }) // a hung watch fails, not hangs
		defer killer.Stop()
		var got []string
		sc := bufio.NewScanner(stdout)
		for len(got) < n && sc.Scan() {
			got = append(got, decode(t, sc.Text())["content"].(string))
		}
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		_, _ = io.Copy(io.Discard, stdout)
		require.NoError(t, cmd.Wait(), "SIGINT is a clean stop: exit 0\n%s", stderr.String())
		require.Contains(t, stderr.String(), "watching as consumer")
		return got
	}

	e.ok("message", "put", "--queue-id", q, "a", "b", "c")
	require.ElementsMatch(t, []string{"a", "b", "c"}, watchUntil(3, "--no-ack"))
	visible, inFlight := e.queueStats(q, "queue")
	require.Equal(t, []float64{3, 0}, []float64{visible, inFlight}, "the Shutdown frame released everything")

	require.ElementsMatch(t, []string{"a", "b", "c"}, watchUntil(3))
	visible, inFlight = e.queueStats(q, "queue")
	require.Equal(t, []float64{0, 0}, []float64{visible, inFlight}, "every line written was acknowledged")
}
