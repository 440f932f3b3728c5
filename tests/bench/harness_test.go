// Package bench is ferry's load benchmark (make bench): it builds and starts the real ferry binary on its
// embedded PostgreSQL (fsync on, as in production), drives it over HTTP on loopback, runs the same
// put/lease/delete cycle as raw SQL through pgx on the same database, and prints throughput, the ratio, latency
// percentiles and memory figures. Every phase is bounded in time and stops by itself.
package bench

import (
	"bufio"
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
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/persistence/pgcluster"
	"github.com/ferry-mq/ferry/services/server"
)

// node is a ferry process under test.
type node struct {
	base    string
	metrics string // the metrics listener's /metrics
	token   string
	tenancy string
	cmd     *exec.Cmd
	pool    *pgxpool.Pool // the same database, for the raw SQL cycle and for observing connections
	client  *http.Client
	dataDir string
	pgDir   string // the cluster's directory (its postmaster's command line names it)
	stderr  *bytes.Buffer
	bin     string   // the built ferry binary
	env     []string // the process's environment
	dbURL   string   // the database's URL

	failMu      sync.Mutex
	failSamples []string // the first failed answers (recordFailure)
}

func startNode(b testing.TB) *node {
	b.Helper()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ferry-bench-")
	if err != nil {
		b.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "ferry")
	build := exec.Command("go", "build", "-o", bin, "github.com/ferry-mq/ferry/cmd/ferry")
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building ferry: %v\n%s", err, out)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	l, _ = net.Listen("tcp", "127.0.0.1:0")
	metricsAddr := l.Addr().String()
	l.Close()
	secretBytes := make([]byte, 32)
	_, _ = rand.Read(secretBytes)
	secret := hex.EncodeToString(secretBytes)
	env := append(os.Environ(), "FERRY_DATA_DIR="+filepath.Join(dir, "data"), "FERRY_LISTEN="+addr,
		"FERRY_METRICS_LISTEN="+metricsAddr, "FERRY_JWT_HS256_SECRET="+secret, "FERRY_LOG_LEVEL=warn", "FERRY_DB_MAX_CONNS=32", "FERRY_DATABASE_URL=", "FERRY_PPROF_LISTEN="+os.Getenv("FERRY_BENCH_PPROF"), "FERRY_PG_SETTINGS="+os.Getenv("FERRY_BENCH_PG_SETTINGS"),
		// The throughput and latency benchmarks measure the queue, not the tenancy's limits (which the middleware
		// still checks): the bench tenancy's defaults are out of reach. BenchmarkNoisyNeighbour sets its own.
		"FERRY_QUOTA_REQUESTS_PER_SECOND=1000000000", "FERRY_QUOTA_BYTES_PER_SECOND=1000000000000",
		"FERRY_QUEUE_REQUESTS_PER_SECOND=1000000000", "FERRY_QUEUE_BYTES_PER_SECOND=1000000000000",
		"FERRY_QUOTA_LONG_POLLS=1000000")
	n := &node{base: "http://" + addr, metrics: "http://" + metricsAddr + "/metrics", dataDir: dir, stderr: &bytes.Buffer{}, bin: bin, env: env}
	n.cmd = exec.Command(bin, "serve")
	n.cmd.Env = env
	n.cmd.Stderr = n.stderr
	// Stopped with this process even when it is killed before its cleanup runs (one such ferry was found still
	// running a quarter of an hour later, its PostgreSQL gone, polling for it).
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := n.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = n.cmd.Process.Signal(os.Interrupt)
		_ = n.cmd.Wait()
		if n.pool != nil {
			n.pool.Close()
		}
		_ = os.RemoveAll(dir)
	})
	n.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2048, MaxConnsPerHost: 0, IdleConnTimeout: time.Minute}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := n.client.Get(n.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("ferry did not become ready: %v\n%s", err, n.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	create := exec.Command(bin, "tenancy", "create", "--name", "bench")
	create.Env = env
	out, err := create.Output()
	if err != nil {
		b.Fatalf("tenancy create: %v", err)
	}
	var t struct{ ID string }
	_ = json.Unmarshal(out, &t)
	n.tenancy = t.ID
	if n.token, err = iam.IssueHS256([]byte(secret), t.ID, "bench", []string{"Administrators"}, 2*time.Hour); err != nil {
		b.Fatal(err)
	}
	n.pgDir = filepath.Join(dir, "data", "postgres")
	cluster, err := pgcluster.Open(ctx, pgcluster.Options{Dir: n.pgDir})
	if err != nil {
		b.Fatal(err)
	}
	n.dbURL = cluster.URL("")
	if n.pool, err = pgxpool.New(ctx, n.dbURL+"&pool_max_conns=32"); err != nil {
		b.Fatal(err)
	}
	return n
}

// call sends a JSON request (in: a value to encode, or []byte already encoded) and decodes a JSON answer into out
// (when not nil; a *[]byte receives the raw body).
func (n *node) call(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	switch in := in.(type) {
	case nil:
	case []byte: // encoded once by the caller: the load generator spends its CPU on requests, not on encoding
		body = bytes.NewReader(in)
	default:
		raw, _ := json.Marshal(in)
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.base+path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+n.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if raw, ok := out.(*[]byte); ok && resp.StatusCode < 300 {
		*raw, err = io.ReadAll(resp.Body)
	} else if out != nil && resp.StatusCode < 300 {
		err = json.NewDecoder(resp.Body).Decode(out)
	} else if resp.StatusCode >= 400 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		n.recordFailure(fmt.Sprintf("%s %s: %d %s", method, path, resp.StatusCode, raw))
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: status %d", method, path, resp.StatusCode)
	}
	return resp.StatusCode, err
}

// recordFailure keeps the first answers over 400 (a few per kind of failure) for failures().
func (n *node) recordFailure(what string) {
	n.failMu.Lock()
	defer n.failMu.Unlock()
	if len(n.failSamples) < 5 {
		n.failSamples = append(n.failSamples, what)
	}
}

// failures returns (and forgets) the failed answers recorded since the last call.
func (n *node) failures() []string {
	n.failMu.Lock()
	defer n.failMu.Unlock()
	out := n.failSamples
	n.failSamples = nil
	return out
}

func (n *node) createQueue(b testing.TB, name string) string {
	b.Helper()
	var q struct{ ID string }
	if _, err := n.call(context.Background(), http.MethodPost, "/20210201/queues",
		map[string]any{"compartmentId": n.tenancy, "displayName": name, "visibilityInSeconds": 120}, &q); err != nil {
		b.Fatal(err)
	}
	return q.ID
}

// rssKiB reads the ferry process's current and peak resident memory.
func (n *node) rssKiB() (current, peak int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", n.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			current = v
		case "VmHWM:":
			peak = v
		}
	}
	return current, peak
}

// ferryCPU is the ferry process's CPU time so far, in seconds (user + system).
func (n *node) ferryCPU() float64 { return processCPU(n.cmd.Process.Pid, false) }

// processCPU is a process's user+system CPU seconds so far (with children's that it reaped when withChildren:
// the postmaster's children are the backends).
func processCPU(pid int, withChildren bool) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	if len(fields) < 15 {
		return 0
	}
	var sum float64
	last := 12
	if withChildren {
		last = 14
	}
	for _, f := range fields[11 : last+1] {
		v, _ := strconv.ParseFloat(f, 64)
		sum += v
	}
	return sum / 100 // clock ticks (USER_HZ = 100 on Linux)
}

// postgresCPUByRole is the CPU seconds used so far by this benchmark's PostgreSQL processes by role (backend,
// autovacuum, walwriter, checkpointer, …; "exited" = reaped children of the postmaster): where PostgreSQL's CPU
// goes besides the statements.
func (n *node) postgresCPUByRole() roleReading {
	out := roleReading{}
	for _, pid := range processes() {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(cmdline), "\x00", " ")
		switch {
		case strings.HasPrefix(cmd, "/") && strings.Contains(cmd, n.pgDir):
			out[pid] = roleCPU{"exited", processCPU(pid, true) - processCPU(pid, false)}
			out[-pid] = roleCPU{"postmaster", processCPU(pid, false)}
		case !strings.HasPrefix(cmd, "postgres: ") || strings.HasPrefix(cmd, "postgres: 15/main"):
			continue // not postgres, or the machine's own cluster
		case strings.Contains(cmd, "autovacuum"):
			out[pid] = roleCPU{"autovacuum", processCPU(pid, false)}
		case strings.Contains(cmd, "(") || strings.Contains(cmd, "[local]"):
			out[pid] = roleCPU{"backend", processCPU(pid, false)}
		default:
			out[pid] = roleCPU{strings.Fields(strings.TrimPrefix(cmd, "postgres: "))[0], processCPU(pid, false)}
		}
	}
	return out
}

// roleReading is the CPU seconds of each PostgreSQL process so far, by pid, with its role.
type roleReading map[int]roleCPU

type roleCPU struct {
	role string
	cpu  float64
}

// roleDelta formats the per-message CPU by role between two readings of postgresCPUByRole (total: cpuSplit's
// PostgreSQL seconds over the same interval), process by process: a
// process that started in between counts whole, and one that exited counts what it used after the first reading
// (its total reaches the postmaster's reaped-children time, "exited", which holds its earlier CPU too).
func roleDelta(before, after roleReading, total, msgs float64) string {
	sums := map[string]float64{}
	for pid, a := range after {
		sums[a.role] += a.cpu - before[pid].cpu
	}
	for pid, b := range before {
		if _, alive := after[pid]; !alive && b.role != "exited" {
			sums["exited"] -= b.cpu
		}
	}
	var parts []string
	for role, d := range sums {
		total -= d
		if d = d * 1e6 / msgs; d >= 0.5 {
			parts = append(parts, fmt.Sprintf("%s %.0f", role, d))
		}
	}
	sort.Strings(parts)
	// What cpuSplit read for this benchmark's cluster and the roles did not account for. The roles count every
	// "postgres: " process on the machine, other clusters' too (cpuSplit counted them all as well until it was
	// narrowed to this cluster), which may be the ~20 µs/msg once seen here.
	if gap := total * 1e6 / msgs; gap >= 0.5 || gap <= -0.5 {
		parts = append(parts, fmt.Sprintf("unattributed %.0f", gap))
	}
	return strings.Join(parts, ", ")
}

// connectionsInUse counts the client connections to the benchmark's database that are running a statement now,
// this one aside: ferry's pool connections in use (its LISTEN connection is idle between notifications; an
// autovacuum worker, which one run counted, is not a connection anybody holds).
func (n *node) connectionsInUse(b testing.TB) int {
	var conns int
	if err := n.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
			AND backend_type = 'client backend'`).Scan(&conns); err != nil {
		b.Fatal(err)
	}
	return conns
}

// processes lists the machine's process ids.
func processes() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cpuSplit is the CPU seconds used so far by ferry, by this benchmark's PostgreSQL (clusterCPU) and by this
// benchmark process (the load generator and the raw SQL client).
func (n *node) cpuSplit() (ferry, postgres, client float64) {
	return n.ferryCPU(), n.clusterCPU(), processCPU(os.Getpid(), false)
}

// clusterCPU is the CPU seconds of this benchmark's PostgreSQL alone: its postmaster with the children it reaped,
// and its running children (cpuSplit counts every postgres process, other clusters on the machine too).
func (n *node) clusterCPU() float64 {
	parents := map[int]int{}
	started := map[int]bool{} // processes with the postmaster's command line: it, and children just forked
	for _, pid := range processes() {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:])); len(fields) > 1 {
			parents[pid], _ = strconv.Atoi(fields[1])
		}
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil &&
			strings.HasPrefix(string(cmdline), "/") && strings.Contains(string(cmdline), n.pgDir) {
			started[pid] = true
		}
	}
	postmaster := 0
	for pid := range started {
		if !started[parents[pid]] {
			postmaster = pid
		}
	}
	if postmaster == 0 {
		return 0
	}
	sum := processCPU(postmaster, true)
	for pid, parent := range parents {
		if parent == postmaster {
			sum += processCPU(pid, false)
		}
	}
	return sum
}

// statementsReset starts a pg_stat_statements reading when the benchmark's cluster loads it
// (FERRY_BENCH_PG_SETTINGS=shared_preload_libraries=pg_stat_statements,pg_stat_statements.track_planning=on): a diagnostic of where PostgreSQL's time
// goes. It answers false when the extension is not loaded.
func (n *node) statementsReset() bool {
	ctx := context.Background()
	if _, err := n.pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return false
	}
	_, err := n.pool.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	return err == nil
}

// statementsReport logs the statements that took most of PostgreSQL's time since statementsReset, with the shared
// buffers each call touched (a lease that walks dead index entries touches many) and, with track_planning, how
// often each was planned (a cached generic plan is planned again whenever vacuum or analyze of a table it reads
// invalidates it).
func (n *node) statementsReport(b testing.TB, msgs float64) {
	rows, err := n.pool.Query(context.Background(), `SELECT calls, plans, total_exec_time, total_plan_time, rows, wal_bytes::float8,
			(shared_blks_hit + shared_blks_read)::float8, regexp_replace(left(query, 60), '\s+', ' ', 'g')
		FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 10`)
	if err != nil {
		b.Logf("pg_stat_statements: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var calls, plans, nrows int64
		var total, plan float64
		var wal, buffers float64
		var query string
		if err := rows.Scan(&calls, &plans, &total, &plan, &nrows, &wal, &buffers, &query); err != nil {
			b.Logf("pg_stat_statements: %v", err)
			return
		}
		b.Logf("  %7d calls %6.0f ms + planning %5.0f ms in %5d plans (%5.1f µs/msg, %.3f ms/call, %.1f rows/call, %.0f buffers/call, %.0f WAL B/msg) %s",
			calls, total, plan, plans, (total+plan)*1000/msgs, (total+plan)/float64(calls), float64(nrows)/float64(calls),
			buffers/float64(calls), wal/msgs, query)
	}
}

// scanLeasedReceipts finds the receipts of the messages a DeleteAndGetMessages answer leased (after its entries'
// results, which echo the acknowledged receipts).
func scanLeasedReceipts(body []byte) []string {
	i := bytes.Index(body, []byte(`"messages":`))
	if i < 0 {
		return nil
	}
	return scanReceipts(body[i:])
}

// scanReceipts finds the receipts in a GetMessages answer without decoding the messages' contents (as the raw SQL
// client reads only ids): receipts are base64url, so the text between the quotes is the receipt.
func scanReceipts(body []byte) []string {
	const key = `"receipt":"`
	var out []string
	for {
		i := bytes.Index(body, []byte(key))
		if i < 0 {
			return out
		}
		body = body[i+len(key):]
		j := bytes.IndexByte(body, '"')
		if j < 0 {
			return out
		}
		out = append(out, string(body[:j]))
		body = body[j+1:]
	}
}

// deleteBody encodes a deleteMessages request for receipts.
func deleteBody(receipts []string) []byte {
	return receiptList(`{"entries":[`, `{"receipt":"`, `"}`, receipts)
}

// commitFrame encodes a watch's commit frame for receipts.
func commitFrame(receipts []string) []byte {
	return receiptList(`{"commit":[`, `"`, `"`, receipts)
}

// receiptList encodes head, then each receipt between before and after, comma-separated, then "]}". Receipts are
// URL-safe: nothing to escape.
func receiptList(head, before, after string, receipts []string) []byte {
	b := make([]byte, 0, len(head)+2+len(receipts)*(len(receipts[0])+len(before)+len(after)+1))
	b = append(b, head...)
	for i, r := range receipts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, before...)
		b = append(b, r...)
		b = append(b, after...)
	}
	return append(b, "]}"...)
}

// peer starts a second ferry process on n's database (n's tenancy and token work on it), with extra environment
// settings: an A/B comparison of a setting alternates phases between n and its peer on the same database.
func (n *node) peer(b testing.TB, extraEnv ...string) *node {
	b.Helper()
	return n.peerBinary(b, n.bin, extraEnv...)
}

// peerBinary is peer with another ferry binary (BenchmarkConsumeAB: another revision's build).
func (n *node) peerBinary(b testing.TB, bin string, extraEnv ...string) *node {
	b.Helper()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	l, _ = net.Listen("tcp", "127.0.0.1:0")
	metricsAddr := l.Addr().String()
	l.Close()
	env := append(append([]string{}, n.env...), "FERRY_LISTEN="+addr, "FERRY_METRICS_LISTEN="+metricsAddr,
		"FERRY_DATABASE_URL="+n.dbURL)
	env = append(env, extraEnv...)
	p := &node{base: "http://" + addr, metrics: "http://" + metricsAddr + "/metrics", token: n.token, tenancy: n.tenancy,
		pool: n.pool, client: n.client, dataDir: n.dataDir, pgDir: n.pgDir, stderr: &bytes.Buffer{}, bin: bin, env: env,
		dbURL: n.dbURL}
	p.cmd = exec.Command(bin, "serve")
	p.cmd.Env = env
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		_ = p.cmd.Wait()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := p.client.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the peer did not become ready: %v\n%s", err, p.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// benchLimits lifts an in-process server's limits out of the benchmarks' way, as the benchmarks on the ferry binary
// do with FERRY_*_PER_SECOND: they measure throughput, not the limits. Rate limits off (16 producers on one queue go
// past its 1,000 calls/s), and room for BenchmarkPublishFanout's 100 consumer groups beside the queue's own.
func benchLimits(c *server.Config) {
	c.Limits.RatesOff = true
	c.Limits.ConsumerGroupsPerQueue = 1000
}
