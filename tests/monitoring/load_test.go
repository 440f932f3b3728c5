package monitoring

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// ferry is a running node with a tenancy, an administrator, and a queue whose messages dead-letter at their
// second delivery: what the load drives.
type ferry struct {
	srv       *testserver.Server
	tenancyID string
	queueID   string
	idleID    string // a queue nobody puts to: its receives long-poll
	// partitionedID has a PARTITION consumer group ("stream") that lags behind.
	partitionedID string
	admin         *e2e.Client
	stranger      *e2e.Client // a member of no group: every call is denied
}

func startFerry(t *testing.T) *ferry {
	t.Helper()
	tn := testserver.StartTenancy(t, "monitoring")
	f := &ferry{
		srv: tn.Server, tenancyID: tn.ID, admin: tn.Admin,
		queueID:       tn.Admin.NewQueue(t, tn.ID, e2e.WithDLQ(1)),
		idleID:        tn.Admin.NewQueue(t, tn.ID),
		partitionedID: tn.Admin.NewQueue(t, tn.ID, e2e.WithPartitions(2, false)),
		stranger:      tn.Client(t, "stranger", "Nobody"),
	}
	tn.Admin.NewGroup(t, f.partitionedID, "stream", "", e2e.ByPartition())
	return f
}

// load drives the traffic that every panel and rule reads, for rounds rounds (a few milliseconds each): puts,
// receives and acknowledgements; a release, a dead letter, a redrive; a long poll; a denied call, a call without a
// token and one for a queue that does not exist. Then it writes the queues' counts and samples their gauges, which
// the node exports at its next refresh of them.
func (f *ferry) load(t *testing.T, rounds int) {
	t.Helper()
	ctx := context.Background()
	longPoll := f.admin.GetAsync(f.idleID, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(1)})
	for i := range rounds {
		f.admin.Put(t, f.queueID, e2e.Msg("a"), e2e.Msg("b"), e2e.Msg("c"))
		got := f.admin.Get(t, f.queueID, e2e.Limit(3))
		require.NotEmpty(t, got)
		if i%5 == 0 {
			// Released, then dead-lettered by the next lease (the queue's DLQ count is 1).
			f.admin.Release(t, f.queueID, got[0])
			got = got[1:]
		}
		f.admin.DeleteAll(t, f.queueID, got)
		switch i % 5 {
		case 1:
			status, body := f.stranger.TryPut(t, f.queueID, "denied")
			e2e.RequireDenied(t, status, body)
		case 2:
			require.Equal(t, http.StatusUnauthorized, f.srv.Raw(t, "", http.MethodGet, "/20210201/queues/"+f.queueID, "", nil).Status)
		case 3:
			status, _ := f.admin.TryGetQueue(t, strings.Replace(f.queueID, "ocid1.queue.", "ocid1.queue.gone", 1))
			require.Equal(t, http.StatusNotFound, status)
		case 4:
			resp, err := f.admin.RedriveMessagesWithResponse(ctx, f.queueID, &sdk.RedriveMessagesParams{}, sdk.RedriveMessagesDetails{})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
		}
		time.Sleep(20 * time.Millisecond) // spread over several scrapes
	}
	require.NoError(t, (<-longPoll).Err)
	dead := f.admin.Get(t, f.queueID, e2e.FromDLQ(), e2e.Limit(32))
	f.admin.DeleteAll(t, f.queueID, dead, e2e.FromDLQ())
	f.admin.Put(t, f.queueID, e2e.Msg("left waiting")) // the queue's gauges see one visible message
	// A partitioned queue with a PARTITION group that read nothing: its lag is the messages put.
	f.admin.Put(t, f.partitionedID, e2e.Keyed("a", "k1"), e2e.Keyed("b", "k2"))

	minute := time.Now().UTC().Truncate(time.Minute)
	require.NoError(t, f.srv.Node.Metering().Flush(ctx, minute))
	require.NoError(t, f.srv.Node.Metering().Sample(ctx, minute))
}

// awaitGauges waits until the node exports the queues' sampled gauges (it re-reads the samples every 15 s).
func (f *ferry) awaitGauges(t *testing.T) string {
	t.Helper()
	var page string
	require.Eventually(t, func() bool {
		page = f.srv.Scrape(t)
		return strings.Contains(page, `ferry_queue_messages_visible{queue="`+f.queueID+`"`) &&
			strings.Contains(page, `ferry_queue_partition_lag{consumer_group=`)
	}, 30*time.Second, 100*time.Millisecond, "the node did not export the queue's sampled gauges")
	return page
}
