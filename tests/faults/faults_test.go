// Package faults injects crashes into a running ferry and checks what its clients saw: the real binary on its
// embedded PostgreSQL (fsync on, as in production), producers and consumers of unique messages over HTTP, while
// ferry is SIGKILLed and restarted at once, and its PostgreSQL is killed outright (every process of it, as a power
// cut would). At the end, nothing acknowledged was lost or undone. A short run is part of make test; make bench
// runs a long one (FERRY_FAULTS_LONG=1).
package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/iam"
)

// ferry is the process under test, restarted in place on the same data directory and port.
type ferry struct {
	t       *testing.T
	bin     string
	dir     string
	env     []string
	base    string
	cmd     *exec.Cmd
	stderr  *lockedBuffer
	client  *http.Client
	token   string
	tenancy string
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func startFerry(t *testing.T) *ferry {
	// Not t.TempDir(): its parent is private, and the postgres user runs the cluster inside it when the tests run
	// as root.
	dir, err := os.MkdirTemp("", "ferry-faults-")
	require.NoError(t, err)
	_ = os.Chmod(dir, 0o755)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin := filepath.Join(dir, "ferry")
	build := exec.Command("go", "build", "-o", bin, "github.com/ferry-mq/ferry/cmd/ferry")
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building ferry: %s", out)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	secret := hex.EncodeToString(raw)
	addr := freeAddr(t)
	f := &ferry{t: t, bin: bin, dir: dir, base: "http://" + addr, stderr: &lockedBuffer{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	f.env = append(os.Environ(), "FERRY_DATA_DIR="+filepath.Join(dir, "data"), "FERRY_LISTEN="+addr,
		"FERRY_METRICS_LISTEN=", "FERRY_DATABASE_URL=", "FERRY_LOG_LEVEL=info", "FERRY_MAINTENANCE_INTERVAL=1s",
		"FERRY_JWT_HS256_SECRET="+secret)
	f.start()
	t.Cleanup(func() {
		if f.cmd != nil && f.cmd.ProcessState == nil {
			_ = f.cmd.Process.Signal(os.Interrupt)
			_ = f.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("ferry's log:\n%s", f.stderr)
		}
	})
	create := exec.Command(bin, "tenancy", "create", "--name", "faults")
	create.Env = f.env
	out, err = create.Output()
	require.NoError(t, err)
	var tn struct{ ID string }
	require.NoError(t, json.Unmarshal(out, &tn))
	f.tenancy = tn.ID
	f.token, err = iam.IssueHS256([]byte(secret), tn.ID, "faults", []string{"Administrators"}, time.Hour)
	require.NoError(t, err)
	return f
}

// start runs ferry serve and returns how long it took to be ready.
func (f *ferry) start() time.Duration {
	f.cmd = exec.Command(f.bin, "serve")
	f.cmd.Env = f.env
	f.cmd.Stderr = f.stderr
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	began := time.Now()
	require.NoError(f.t, f.cmd.Start())
	for {
		if status, _ := f.call(context.Background(), http.MethodGet, "/readyz", nil, nil); status == http.StatusOK {
			return time.Since(began)
		}
		if time.Since(began) > 90*time.Second {
			f.t.Fatalf("ferry was not ready 90 s after it started")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// outage is how long ferry was not ready after a fault, and how much of that PostgreSQL spent on its own work (its
// shutdown checkpoint, its crash recovery), read from its log. PostgreSQL's part is disk work whose length depends on
// the machine's load; the rest (added) is what ferry adds: noticing, waiting, starting, reconnecting.
type outage struct {
	total, postgres time.Duration
}

func (o outage) added() time.Duration { return o.total - o.postgres }

func (o outage) String() string {
	return fmt.Sprintf("%v (PostgreSQL's own work %v)", o.total.Round(time.Millisecond), o.postgres.Round(time.Millisecond))
}

// postgresDir is where the embedded cluster lives: pgdata/ and postgres.log.
func (f *ferry) postgresDir() string { return filepath.Join(f.dir, "data", "postgres") }

// postgresLogSize is where PostgreSQL's log ends now: what it writes after a fault starts there.
func (f *ferry) postgresLogSize() int64 {
	st, err := os.Stat(filepath.Join(f.postgresDir(), "postgres.log"))
	if err != nil {
		return 0
	}
	return st.Size()
}

// outage pairs how long ferry was not ready with PostgreSQL's own work in its log from offset on.
func (f *ferry) outage(total time.Duration, offset int64) outage {
	return outage{total: total, postgres: postgresWork(f.t, filepath.Join(f.postgresDir(), "postgres.log"), offset)}
}

// crash SIGKILLs ferry (its PostgreSQL gets its parent-death signal) and starts it again at once.
func (f *ferry) crash() outage {
	offset := f.postgresLogSize()
	_ = f.cmd.Process.Kill()
	_ = f.cmd.Wait()
	return f.outage(f.start(), offset)
}

// killPostgres SIGKILLs every process of ferry's PostgreSQL at once, as a power cut would: whatever was not on
// disk is gone. It returns how long ferry took to answer /readyz again, and PostgreSQL's part of that.
func (f *ferry) killPostgres() outage {
	lines, err := os.ReadFile(filepath.Join(f.postgresDir(), "pgdata", "postmaster.pid"))
	require.NoError(f.t, err)
	pid, err := strconv.Atoi(strings.SplitN(string(lines), "\n", 2)[0])
	require.NoError(f.t, err)
	offset := f.postgresLogSize()
	began := time.Now()
	require.NoError(f.t, syscall.Kill(-pid, syscall.SIGKILL)) // its process group: the postmaster and its children
	time.Sleep(200 * time.Millisecond)
	for {
		if status, _ := f.call(context.Background(), http.MethodGet, "/readyz", nil, nil); status == http.StatusOK {
			return f.outage(time.Since(began), offset)
		}
		if time.Since(began) > 60*time.Second {
			f.t.Fatalf("ferry did not become ready again within 60 s of its PostgreSQL's death")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// postgresWork reads PostgreSQL's log after offset and adds up the spans it spent on its own: from a fast shutdown
// request to "database system is shut down" (the shutdown checkpoint) and from "starting PostgreSQL" to "ready to
// accept connections" (after a kill: syncing the data directory, redo and the end-of-recovery checkpoint). The
// lines of those spans go to the test's log.
func postgresWork(t *testing.T, path string, offset int64) time.Duration {
	file, err := os.Open(path)
	require.NoError(t, err)
	defer file.Close()
	_, err = file.Seek(offset, io.SeekStart)
	require.NoError(t, err)
	raw, err := io.ReadAll(file)
	require.NoError(t, err)
	spans := []struct{ begin, end string }{
		{"received fast shutdown request", "database system is shut down"},
		{"starting PostgreSQL", "database system is ready to accept connections"},
	}
	var work time.Duration
	var shown []string
	began := make([]time.Time, len(spans)) // of each span, while it is open
	for _, line := range strings.Split(string(raw), "\n") {
		// log_line_prefix '%m [%p] ': "2026-01-02 15:04:05.000 UTC [123] LOG:  ...". A line it cannot date counts
		// for nothing, which leaves the whole outage to ferry's bound.
		stamp, _, ok := strings.Cut(line, " [")
		if !ok {
			continue
		}
		at, err := time.Parse("2006-01-02 15:04:05.000 MST", stamp)
		if err != nil {
			continue
		}
		for i, span := range spans {
			switch {
			case strings.Contains(line, span.begin):
				began[i] = at
				shown = append(shown, line)
			case strings.Contains(line, span.end) && !began[i].IsZero():
				work += at.Sub(began[i])
				began[i] = time.Time{}
				shown = append(shown, line)
			}
		}
		if strings.Contains(line, "redo done") || strings.Contains(line, "checkpoint complete") {
			shown = append(shown, line)
		}
	}
	t.Logf("PostgreSQL's own work %v:\n%s", work.Round(time.Millisecond), strings.Join(shown, "\n"))
	return work
}

func (f *ferry) call(ctx context.Context, method, path string, in, out any) (int, error) {
	var body *bytes.Reader
	if in != nil {
		raw, _ := json.Marshal(in)
		body = bytes.NewReader(raw)
	} else {
		body = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.base+path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
	}
	var apiErr struct{ Code, Message string }
	_ = json.NewDecoder(resp.Body).Decode(&apiErr)
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s %s", method, path, resp.StatusCode, apiErr.Code, apiErr.Message)
	}
	return resp.StatusCode, nil
}

// ledger is what the clients saw.
type ledger struct {
	mu         sync.Mutex
	putAcked   map[string]bool      // puts answered 200
	putTried   map[string]bool      // puts sent (answered or not)
	deliveries map[string][]int     // delivery counts seen, in order
	lastSeen   map[string]time.Time // when each message was last delivered
	deleted    map[string]time.Time // deletes answered 200 (and when)
	afterAck   []string             // deliveries of a message after its delete was answered 200
	regressed  []string             // delivery counts that went down
	repeated   []repeat             // delivery counts seen again
	pgKills    []time.Time          // when PostgreSQL was killed
	unknown    []string             // deliveries of messages never put
	statuses   map[int]int          // answers by status
}

func newLedger() *ledger {
	return &ledger{putAcked: map[string]bool{}, putTried: map[string]bool{}, deliveries: map[string][]int{},
		lastSeen: map[string]time.Time{}, deleted: map[string]time.Time{}, statuses: map[int]int{}}
}

// repeat is a delivery whose count the message's previous delivery (at previous) had already shown.
type repeat struct {
	id       string
	count    int
	previous time.Time
}

// undoneByKill reports whether the previous delivery of r may be a lease that a PostgreSQL kill undid: a lease
// commits without waiting for its WAL, which the WAL writer flushes within 3 × wal_writer_delay (600 ms at the
// default), so it was answered at most that long (plus slack) before a kill, or while the kill was happening.
func (l *ledger) undoneByKill(r repeat) bool {
	for _, k := range l.pgKills {
		if r.previous.After(k.Add(-2*time.Second)) && r.previous.Before(k.Add(time.Second)) {
			return true
		}
	}
	return false
}

func (l *ledger) status(code int) {
	l.mu.Lock()
	l.statuses[code]++
	l.mu.Unlock()
}

func (l *ledger) delivered(id string, count int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.putTried[id] {
		l.unknown = append(l.unknown, id)
	}
	if at, ok := l.deleted[id]; ok {
		l.afterAck = append(l.afterAck, fmt.Sprintf("%s (deleted %s ago, delivery %d)", id, time.Since(at).Round(time.Millisecond), count))
	}
	if seen := l.deliveries[id]; len(seen) > 0 && count < seen[len(seen)-1] {
		l.regressed = append(l.regressed, fmt.Sprintf("%s: %v then %d", id, seen, count))
	} else if len(seen) > 0 && count == seen[len(seen)-1] {
		l.repeated = append(l.repeated, repeat{id: id, count: count, previous: l.lastSeen[id]})
	}
	l.deliveries[id] = append(l.deliveries[id], count)
	l.lastSeen[id] = time.Now()
}

type getAnswer struct {
	Messages []struct {
		Content       string `json:"content"`
		Receipt       string `json:"receipt"`
		DeliveryCount int    `json:"deliveryCount"`
	} `json:"messages"`
}

// TestCrashes: producers and consumers run while ferry is killed and restarted at once, and while its PostgreSQL
// is killed. Nothing acknowledged is lost or undone: every put answered 200 is consumed, no message that was not
// put comes out, no message is delivered again after its delete was answered 200, and no delivery count goes
// down (a count repeats only where PostgreSQL's death undid the lease that showed it). Every restart is ready
// within seconds.
func TestCrashes(t *testing.T) {
	crashes, pgKills, every := 3, 1, 3*time.Second
	if os.Getenv("FERRY_FAULTS_LONG") != "" {
		crashes, pgKills, every = 10, 3, 4*time.Second
	}
	f := startFerry(t)
	var q struct{ ID string }
	_, err := f.call(context.Background(), http.MethodPost, "/20210201/queues",
		map[string]any{"compartmentId": f.tenancy, "displayName": "faults", "visibilityInSeconds": 2}, &q)
	require.NoError(t, err)
	l := newLedger()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var next atomic.Int64
	for p := range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				var batch []map[string]string
				var ids []string
				for range 10 {
					id := fmt.Sprintf("p%d-%d", p, next.Add(1))
					ids = append(ids, id)
					batch = append(batch, map[string]string{"content": id})
				}
				l.mu.Lock()
				for _, id := range ids {
					l.putTried[id] = true
				}
				l.mu.Unlock()
				status, _ := f.call(ctx, http.MethodPost, "/20210201/queues/"+q.ID+"/messages", map[string]any{"messages": batch}, nil)
				l.status(status)
				if status == http.StatusOK {
					l.mu.Lock()
					for _, id := range ids {
						l.putAcked[id] = true
					}
					l.mu.Unlock()
				} else {
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	consume := func(ctx context.Context) int {
		var got getAnswer
		status, _ := f.call(ctx, http.MethodGet, "/20210201/queues/"+q.ID+"/messages?limit=20&timeoutInSeconds=1", nil, &got)
		l.status(status)
		if status != http.StatusOK {
			time.Sleep(20 * time.Millisecond)
			return 0
		}
		var entries []map[string]string
		for _, m := range got.Messages {
			l.delivered(m.Content, m.DeliveryCount)
			entries = append(entries, map[string]string{"receipt": m.Receipt})
		}
		if len(entries) == 0 {
			return 0
		}
		var res struct {
			Entries []struct {
				ErrorCode *int `json:"errorCode"`
			} `json:"entries"`
		}
		status, _ = f.call(context.WithoutCancel(ctx), http.MethodPost, "/20210201/queues/"+q.ID+"/messages/actions/deleteMessages",
			map[string]any{"entries": entries}, &res)
		l.status(status)
		if status == http.StatusOK {
			now := time.Now()
			l.mu.Lock()
			for i, e := range res.Entries {
				if e.ErrorCode == nil && i < len(got.Messages) {
					l.deleted[got.Messages[i].Content] = now
				}
			}
			l.mu.Unlock()
		}
		return len(got.Messages)
	}
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				consume(ctx)
			}
		})
	}

	var restarts, recoveries []outage
	for i := range crashes + pgKills {
		time.Sleep(every)
		if i%((crashes+pgKills)/pgKills) == (crashes+pgKills)/pgKills-1 && len(recoveries) < pgKills {
			l.mu.Lock()
			l.pgKills = append(l.pgKills, time.Now())
			l.mu.Unlock()
			recoveries = append(recoveries, f.killPostgres())
		} else {
			restarts = append(restarts, f.crash())
		}
	}
	time.Sleep(every)
	stop()
	wg.Wait()
	// Drain: what was put and not yet deleted comes out (the leases of crashed clients lapse in 2 s), until a
	// receive finds the queue empty.
	drainUntil := time.Now().Add(60 * time.Second)
	for empty := 0; empty < 3 && time.Now().Before(drainUntil); {
		if consume(context.Background()) == 0 {
			empty++
		} else {
			empty = 0
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	// Lost: a put answered 200 whose message never came out. (A message that came out but whose delete's answer
	// was lost in a crash may be gone without a 200 for its delete: that is not a loss.)
	var lost []string
	for id := range l.putAcked {
		if len(l.deliveries[id]) == 0 {
			lost = append(lost, id)
		}
	}
	t.Logf("%d puts answered 200 (%d tried), %d deleted, %d deliveries; answers by status %v", len(l.putAcked), len(l.putTried),
		len(l.deleted), countDeliveries(l.deliveries), l.statuses)
	t.Logf("ferry restarts ready in %v; after PostgreSQL's death ready again in %v", restarts, recoveries)
	require.Empty(t, lost, "acknowledged puts never delivered")
	require.Empty(t, l.unknown, "deliveries of messages that were never put")
	require.Empty(t, l.afterAck, "deliveries after an acknowledged delete")
	require.Empty(t, l.regressed, "delivery counts that went down")
	// A count repeats only when PostgreSQL's death undid the lease that had shown it (leases commit without waiting
	// for their WAL): never after a crash of ferry alone, nor far from a kill.
	var unexplained []string
	for _, r := range l.repeated {
		if !l.undoneByKill(r) {
			unexplained = append(unexplained, fmt.Sprintf("%s: count %d again, first shown %s", r.id, r.count, r.previous.Format(time.StampMilli)))
		}
	}
	t.Logf("delivery counts repeated after a lease that PostgreSQL's death undid: %d", len(l.repeated)-len(unexplained))
	require.Empty(t, unexplained, "delivery counts repeated away from any PostgreSQL kill")
	require.Zero(t, l.statuses[http.StatusInternalServerError], "500 answers")
	// PostgreSQL's checkpoints and crash recovery are disk work that a loaded machine stretches (a recovery took
	// 10.7 s beside other test packages); what ferry adds to them is bounded.
	for _, o := range append(restarts, recoveries...) {
		require.Less(t, o.added(), 10*time.Second, "ferry added too much to a restart or a recovery: %v", o)
	}
	require.Greater(t, len(l.putAcked), 500, "the clients did too little for the test to mean something")
}

func countDeliveries(m map[string][]int) int {
	n := 0
	for _, d := range m {
		n += len(d)
	}
	return n
}
