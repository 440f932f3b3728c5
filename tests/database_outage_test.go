package tests

import (
	"context"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/migrations"
	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/persistence/pgcluster"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestDatabaseOutage: two nodes on an external database that goes away and comes back at the same address.
// While it is away, calls answer 503 ServiceUnavailable with Retry-After (the SDKs retry them), never 500, and
// /readyz says not ready; once it is back, both nodes serve again without a restart — their pools reconnect, and so
// does the LISTEN connection that carries wake-ups between nodes.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ferry-outage-") // reachable by the postgres user when the tests run as root
	require.NoError(t, err)
	_ = os.Chmod(dir, 0o755)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	opts := pgcluster.Options{Dir: dir, NoSync: true, Port: port}
	cluster, err := pgcluster.Open(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop(context.Background()) }) // registered first: runs after the nodes stop
	url := cluster.URL("")
	require.NoError(t, migrations.Up(ctx, url))

	a := testserver.Start(t, testserver.WithDatabase(url))
	b := a.Peer(t)
	tenancyID, admin := a.Admin(t, "outage")
	token := a.AdminToken(t, tenancyID)
	q := admin.NewQueue(t, tenancyID)
	admin.Put(t, q, e2e.Msg("before"))

	require.NoError(t, cluster.Stop(ctx))
	for _, call := range []struct{ method, path string }{
		{http.MethodGet, "/20210201/queues/" + q + "/messages"},
		{http.MethodGet, "/20210201/queues/" + q},
		{http.MethodPost, "/20210201/queues/" + q + "/messages"},
		{http.MethodGet, "/20210201/queues?compartmentId=" + tenancyID},
	} {
		var body any
		if call.method == http.MethodPost {
			body = map[string]any{"messages": []map[string]string{{"content": "during"}}}
		}
		r := a.Call(t, token, call.method, call.path, body)
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s %s: %s", call.method, call.path, r.Body)
		e2e.RequireErrorBody(t, r.Body, "ServiceUnavailable")
		require.Equal(t, "1", r.Header.Get("retry-after"))
	}
	r := a.Raw(t, "", http.MethodGet, "/readyz", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.Status)

	cluster, err = pgcluster.Open(ctx, opts)
	require.NoError(t, err)
	for _, node := range []*testserver.Server{a, b} {
		require.Eventually(t, func() bool {
			return node.Raw(t, "", http.MethodGet, "/readyz", "", nil).Status == http.StatusOK
		}, 20*time.Second, 50*time.Millisecond)
	}
	// Both nodes serve again; the first's LISTEN connection is back (it reconnected), so a put on the second
	// wakes a long poll on the first.
	require.Eventually(t, func() bool {
		return metricSum(t, a.Scrape(t), "ferry_listen_reconnects_total") >= 1
	}, 20*time.Second, 50*time.Millisecond)
	got := admin.Get(t, q, e2e.Visibility(60))
	require.Equal(t, []string{"before"}, e2e.Contents(got))
	wait := 10
	poll := admin.GetAsync(q, &sdk.GetMessagesParams{TimeoutInSeconds: &wait})
	time.Sleep(200 * time.Millisecond)
	b.Client(t, token).Put(t, q, e2e.Msg("after"))
	res := <-poll
	require.NoError(t, res.Err)
	require.Equal(t, []string{"after"}, e2e.Contents(res.Msgs))
}
