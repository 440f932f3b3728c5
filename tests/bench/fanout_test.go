package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/persistence/testdb"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// fanoutMinPhase and fanoutMinBatches bound the measured phase from below: with -benchtime 1x (make bench) a
// single batch says little, so the rates are taken over at least this much publishing (and enough messages for
// the consumption's slices). One group's consumption is the median of fanoutDrainSlices drains of
// fanoutDrainSlice messages each.
const (
	fanoutMinPhase    = time.Second
	fanoutMinBatches  = 60
	fanoutBatch       = 20
	fanoutDrainSlices = 3
	fanoutDrainSlice  = 400
)

// fanoutResult is one sub-benchmark's figures.
type fanoutResult struct {
	groups           int
	msgsPerSec       float64
	rowsPerSec       float64
	batchMillis      float64
	tripsPerBatch    float64
	discardedBatches int
	bytesPerMsg      float64 // stored bytes per message (every group's rows and the shared body), tuples only
	consumedPerSec   float64 // one group's GetMessages + DeleteMessages rate
}

// BenchmarkPublishFanout publishes batches of 20 × 1 KiB messages through an in-process server to a queue with 1,
// 10 and 100 consumer groups whose filters all match, and reports messages/s, stored rows/s (one row per message
// and group) and database round trips per batch, counted by a proxy in front of PostgreSQL. Fanout costs rows, not
// round trips: a batch is one INSERT whatever the number of groups, so 100 groups must cost far less than 100× one.
// The summary line compares 100 groups with 1.
func BenchmarkPublishFanout(b *testing.B) {
	proxy := startCountingProxy(b, testdb.New(b))
	srv := testserver.Start(b, testserver.WithDatabase(proxy.url), benchLimits)
	tenancyID, c := srv.Admin(b, "bench-fanout")
	ctx := context.Background()

	content := strings.Repeat("x", 1024)
	batch := make([]sdk.PutMessagesDetailsEntry, fanoutBatch)
	for i := range batch {
		attrs := sdk.MessageAttributes{"n": float64(i)}
		batch[i] = sdk.PutMessagesDetailsEntry{Content: content, Attributes: &attrs}
	}
	publish := func(b *testing.B, queueID string, groups int) {
		resp, err := c.PutMessagesWithResponse(ctx, queueID, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: batch})
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != http.StatusOK {
			b.Fatalf("put: %d %s", resp.StatusCode(), resp.Body)
		}
		for _, m := range resp.JSON200.Messages {
			if m.ConsumerGroups == nil || *m.ConsumerGroups != groups {
				b.Fatalf("a message reached %v consumer groups, not %d", m.ConsumerGroups, groups)
			}
		}
	}

	var results []fanoutResult
	for _, groups := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) {
			// The primary group is disabled: exactly `groups` groups receive each message.
			primary, maxSize := false, int64(1<<40)
			q, err := c.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{
				CompartmentId: tenancyID, DisplayName: fmt.Sprintf("fanout-%d", groups), MaxSizeInBytes: &maxSize,
				Capabilities: &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, IsPrimaryConsumerGroupEnabled: &primary}},
			})
			if err != nil || q.StatusCode() != http.StatusAccepted {
				b.Fatalf("create queue: %v %s", err, q.Body)
			}
			queueID := q.JSON202.Id
			filter := ":n >= 0"
			for i := range groups {
				g, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{
					QueueId: queueID, DisplayName: "g" + strconv.Itoa(i), Filter: &filter,
				})
				if err != nil || g.StatusCode() != http.StatusAccepted {
					b.Fatalf("create group: %v %s", err, g.Body)
				}
			}
			publish(b, queueID, groups) // warm the caches (queue, groups, compiled filters, size)

			trips0 := proxy.roundTrips.Load()
			start := time.Now()
			batches := 0
			for b.Loop() {
				publish(b, queueID, groups)
				batches++
			}
			for batches < fanoutMinBatches || time.Since(start) < fanoutMinPhase {
				publish(b, queueID, groups)
				batches++
			}
			elapsed := time.Since(start).Seconds()
			trips := proxy.roundTrips.Load() - trips0

			r := fanoutResult{
				groups:        groups,
				msgsPerSec:    float64(batches*fanoutBatch) / elapsed,
				rowsPerSec:    float64(batches*fanoutBatch*groups) / elapsed,
				batchMillis:   1000 * elapsed / float64(batches),
				tripsPerBatch: float64(trips) / float64(batches),
			}
			// Storage: the bytes of the queue's rows (one per message and group) and of its shared bodies.
			if err := srv.Pool.QueryRow(ctx, `SELECT (coalesce((SELECT sum(pg_column_size(m.*)) FROM messages m WHERE m.queue_no = q.no), 0)
					+ coalesce((SELECT sum(pg_column_size(b.*)) FROM message_bodies b WHERE b.queue_no = q.no), 0))::float8
					/ greatest((SELECT count(DISTINCT id) FROM messages m WHERE m.queue_no = q.no), 1)
				FROM queues q WHERE q.id = $1`, queueID).Scan(&r.bytesPerMsg); err != nil {
				b.Fatal(err)
			}
			// Consumption: one group drains its messages (GetMessages of 20, DeleteMessages of what it got), after a
			// VACUUM ANALYZE of the message tables, so that autovacuum's pass over the rows just put (and its
			// analyze of them) runs beside neither size's drain; the median of a few slices, so that one slow
			// moment of the machine does not decide it (slices of the same drain have differed 2–4×, with no
			// statement of the drain over 2 ms: the serial client's turns on a busy machine).
			if _, err := srv.Pool.Exec(ctx, `VACUUM ANALYZE messages, message_bodies`); err != nil {
				b.Fatal(err)
			}
			rates := make([]float64, fanoutDrainSlices)
			for i := range rates {
				rates[i] = drainGroup(b, c, queueID, "g0", fanoutDrainSlice)
			}
			b.Logf("%d groups: drain slices %.0f msgs/s", groups, rates)
			r.consumedPerSec = median(rates)
			b.ReportMetric(r.msgsPerSec, "msgs/s")
			b.ReportMetric(r.rowsPerSec, "rows/s")
			b.ReportMetric(r.tripsPerBatch, "roundtrips/batch")
			b.Logf("%d groups: %d batches in %.2fs, %.0f msgs/s, %.0f rows/s, %.2f ms/batch, %.2f database round trips/batch, "+
				"%.0f bytes stored per message, one group consumes %.0f msgs/s",
				groups, batches, elapsed, r.msgsPerSec, r.rowsPerSec, r.batchMillis, r.tripsPerBatch, r.bytesPerMsg, r.consumedPerSec)
			results = append(results, r)

			// The next size starts from an empty table.
			for _, table := range []string{"messages", "message_bodies"} {
				if _, err := srv.Pool.Exec(ctx, `DELETE FROM `+table+` WHERE queue_no = (SELECT no FROM queues WHERE id = $1)`, queueID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}

	byGroups := map[int]fanoutResult{}
	var line []string
	for _, r := range results {
		byGroups[r.groups] = r
		line = append(line, fmt.Sprintf("groups=%d msgs_per_s=%.0f rows_per_s=%.0f ms_per_batch=%.2f roundtrips_per_batch=%.2f bytes_per_msg=%.0f consume_per_s=%.0f",
			r.groups, r.msgsPerSec, r.rowsPerSec, r.batchMillis, r.tripsPerBatch, r.bytesPerMsg, r.consumedPerSec))
	}
	one, okOne := byGroups[1]
	hundred, okHundred := byGroups[100]
	if okOne && okHundred {
		line = append(line, fmt.Sprintf("batch_time_100_over_1=%.2f roundtrips_100_over_1=%.2f rows_per_s_100_over_1=%.2f bytes_per_msg_100_over_1=%.2f consume_100_over_1=%.2f",
			hundred.batchMillis/one.batchMillis, hundred.tripsPerBatch/one.tripsPerBatch, hundred.rowsPerSec/one.rowsPerSec,
			hundred.bytesPerMsg/one.bytesPerMsg, hundred.consumedPerSec/one.consumedPerSec))
		if hundred.tripsPerBatch > 2*one.tripsPerBatch {
			b.Errorf("100 groups take %.2f round trips per batch, 1 group %.2f: fanout must not add round trips",
				hundred.tripsPerBatch, one.tripsPerBatch)
		}
	}
	fmt.Printf("fanout: %s\n", strings.Join(line, " | "))
}

// drainGroup consumes up to n messages of a consumer group (GetMessages of 20 with a long visibility, then
// DeleteMessages of what came) and returns messages/s.
func drainGroup(b *testing.B, c *e2e.Client, queueID, group string, n int) float64 {
	ctx := context.Background()
	start, done := time.Now(), 0
	limit, visibility, wait := 20, 300, 0
	for done < n {
		resp, err := c.GetMessagesWithResponse(ctx, queueID, &sdk.GetMessagesParams{ConsumerGroupId: &group, Limit: &limit,
			VisibilityInSeconds: &visibility, TimeoutInSeconds: &wait})
		if err != nil || resp.JSON200 == nil {
			b.Fatalf("get: %v", err)
		}
		if len(resp.JSON200.Messages) == 0 {
			break
		}
		var entries []sdk.DeleteMessagesDetailsEntry
		for _, m := range resp.JSON200.Messages {
			entries = append(entries, sdk.DeleteMessagesDetailsEntry{Receipt: m.Receipt})
		}
		del, err := c.DeleteMessagesWithResponse(ctx, queueID, &sdk.DeleteMessagesParams{ConsumerGroupId: &group},
			sdk.DeleteMessagesDetails{Entries: entries})
		if err != nil || del.StatusCode() != http.StatusOK {
			b.Fatalf("delete: %v", err)
		}
		done += len(entries)
	}
	return float64(done) / time.Since(start).Seconds()
}

// countingProxy forwards PostgreSQL connections to the real server and counts round trips: the client's Sync
// (end of an extended-protocol pipeline: one answer for all the statements before it) and Query (simple protocol)
// messages. Background statements of the server (NOTIFY, maintenance) are counted too.
type countingProxy struct {
	url        string
	roundTrips atomic.Int64
}

// startCountingProxy listens on a Unix socket that stands in for the database's and returns the rewritten URL.
func startCountingProxy(b testing.TB, databaseURL string) *countingProxy {
	b.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		b.Fatal(err)
	}
	query := u.Query()
	target := filepath.Join(query.Get("host"), ".s.PGSQL."+query.Get("port"))
	dir, err := os.MkdirTemp("", "pgproxy")
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL."+query.Get("port")))
	if err != nil {
		b.Fatal(err)
	}
	query.Set("host", dir)
	u.RawQuery = query.Encode()
	p := &countingProxy{url: u.String()}

	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("unix", target)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			wg.Go(func() {
				_, _ = io.Copy(client, server)
				client.Close()
			})
			wg.Go(func() {
				_ = p.forward(server, client)
				server.Close()
			})
		}
	})
	b.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		_ = os.RemoveAll(dir)
	})
	return p
}

// forward copies the client's messages to the server, counting Sync and Query messages. The first messages
// (SSLRequest, GSSENCRequest, StartupMessage) have no type byte.
func (p *countingProxy) forward(dst io.Writer, src io.Reader) error {
	r := bufio.NewReaderSize(src, 64<<10)
	w := bufio.NewWriterSize(dst, 64<<10)
	var header [5]byte
	for untyped := true; ; {
		if untyped {
			if _, err := io.ReadFull(r, header[:4]); err != nil {
				return err
			}
			n := int64(binary.BigEndian.Uint32(header[:4]))
			body := make([]byte, n-4)
			if _, err := io.ReadFull(r, body); err != nil {
				return err
			}
			code := binary.BigEndian.Uint32(body[:4])
			untyped = code == 80877103 || code == 80877104 // SSL or GSS encryption request: the startup follows
			if _, err := w.Write(header[:4]); err != nil {
				return err
			}
			if _, err := w.Write(body); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
			continue
		}
		if _, err := io.ReadFull(r, header[:5]); err != nil {
			return err
		}
		if header[0] == 'S' || header[0] == 'Q' {
			p.roundTrips.Add(1)
		}
		if _, err := w.Write(header[:5]); err != nil {
			return err
		}
		if _, err := io.CopyN(w, r, int64(binary.BigEndian.Uint32(header[1:5]))-4); err != nil {
			return err
		}
		if r.Buffered() == 0 { // nothing more pending from the client: send what we have
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}
