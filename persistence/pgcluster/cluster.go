// Package pgcluster runs a private PostgreSQL cluster for ferry's embedded default and for tests: it finds the
// server binaries, creates the cluster with initdb on first use, starts postgres on a unix socket in the data
// directory (and a free loopback port), reuses a cluster that another ferry process already started, and stops
// what it started. initdb and postgres refuse to run as root, so under root the cluster runs as the unprivileged
// "postgres" system user and its files belong to that user.
package pgcluster

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// DatabaseDefault is the database that Open creates when Options.Database is empty.
const DatabaseDefault = "ferry"

// StartTimeoutDefault bounds how long Open waits for postgres to accept connections.
const StartTimeoutDefault = 60 * time.Second

// Options configure Open.
type Options struct {
	// Dir holds the cluster: pgdata/ (the data directory), run/ (the unix socket) and postgres.log.
	Dir string
	// Database is created when missing. Default DatabaseDefault.
	Database string
	// NoSync trades durability for speed (initdb --no-sync, fsync=off): for tests only.
	NoSync bool
	// InitCache, when set, is a directory where a freshly initialised data directory is kept, so that the next
	// cluster is a copy (~0.1 s) instead of another initdb (~1–2 s). Tests use it; the server does not.
	InitCache string
	// Settings are extra postgres -c settings (name → value).
	Settings map[string]string
	// StartTimeout bounds the wait for postgres to accept connections. Default StartTimeoutDefault.
	StartTimeout time.Duration
	// Port is the loopback port to listen on. Default: a free one.
	Port int
	// Logger receives progress messages. Default slog.Default().
	Logger *slog.Logger
}

// Cluster is a running private PostgreSQL cluster.
type Cluster struct {
	opts      Options
	binDir    string
	dir       string
	pgdata    string
	socketDir string
	port      int
	cred      *syscall.Credential // set when the cluster runs as another user (ferry runs as root)
	args      []string            // postgres' arguments, kept for restarts

	mu       sync.Mutex
	proc     *os.Process   // the running postmaster; nil when another process started the cluster and we only use it
	exited   chan struct{} // closed when proc exits
	stopping bool          // Stop was called: an exit is expected, not restarted
	watching chan struct{} // closed when the supervisor returns
}

// Open starts the cluster in opts.Dir (creating it with initdb on first use), or connects to the one that another
// process already runs there, and makes sure opts.Database exists.
func Open(ctx context.Context, opts Options) (*Cluster, error) {
	opts.Database = cmp.Or(opts.Database, DatabaseDefault)
	opts.StartTimeout = cmp.Or(opts.StartTimeout, StartTimeoutDefault)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	binDir, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cmp.Or(opts.Dir, ".data"))
	if err != nil {
		return nil, fmt.Errorf("pgcluster: data directory: %w", err)
	}
	c := &Cluster{opts: opts, binDir: binDir}
	if os.Geteuid() == 0 {
		if c.cred, err = unprivilegedUser(); err != nil {
			return nil, err
		}
		if !reachable(dir, c.cred.Uid, c.cred.Gid) {
			// The postgres user cannot traverse to dir (for example a checkout under /root): keep the cluster
			// in a directory it can reach, named after dir so that the next run finds it again.
			sum := sha256.Sum256([]byte(dir))
			fallback := filepath.Join(os.TempDir(), "ferry-pg-"+hex.EncodeToString(sum[:6]))
			opts.Logger.Warn("the postgres user cannot reach the data directory; keeping the cluster elsewhere",
				"dataDir", dir, "clusterDir", fallback)
			dir = fallback
		}
	}
	c.dir = dir
	c.pgdata = filepath.Join(dir, "pgdata")
	c.socketDir = filepath.Join(dir, "run")
	if len(c.socketDir) > 90 { // unix socket paths are limited to 107 bytes
		sum := sha256.Sum256([]byte(dir))
		c.socketDir = filepath.Join(os.TempDir(), "ferry-pg-sock-"+hex.EncodeToString(sum[:6]))
	}
	if err := c.prepareDirs(); err != nil {
		return nil, err
	}
	if err := c.initIfNeeded(ctx); err != nil {
		return nil, err
	}
	reused, err := c.reuseRunning(ctx)
	if err != nil {
		return nil, err
	}
	if !reused {
		if err := c.start(ctx); err != nil {
			return nil, err
		}
	}
	if err := c.ensureDatabase(ctx); err != nil {
		_ = c.Stop(context.Background())
		return nil, err
	}
	return c, nil
}

// URL is the connection string for database db (the cluster's default database when empty).
func (c *Cluster) URL(db string) string {
	q := url.Values{"host": {c.socketDir}, "port": {strconv.Itoa(c.port)}, "sslmode": {"disable"}}
	return "postgres://postgres@/" + url.PathEscape(cmp.Or(db, c.opts.Database)) + "?" + q.Encode()
}

// Port is the loopback TCP port the cluster listens on (127.0.0.1).
func (c *Cluster) Port() int { return c.port }

// Dir is the directory that holds the cluster.
func (c *Cluster) Dir() string { return c.dir }

// Owned reports whether this process started the cluster (and Stop will stop it).
func (c *Cluster) Owned() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc != nil
}

// Stop shuts down the cluster if this process started it (a fast shutdown: sessions are closed, nothing is lost),
// and ends its supervision. It is safe to call more than once.
func (c *Cluster) Stop(ctx context.Context) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	proc, exited, watching := c.proc, c.exited, c.watching
	c.stopping = true
	c.mu.Unlock()
	if proc == nil {
		return nil
	}
	defer func() {
		if watching != nil {
			<-watching
		}
	}()
	select {
	case <-exited:
		return nil
	default:
	}
	_ = proc.Signal(syscall.SIGINT)
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
	case <-timer.C:
	}
	_ = proc.Kill()
	<-exited
	return errors.New("pgcluster: postgres did not stop in time and was killed")
}

// supervise restarts postgres, on the same port, whenever it exits without Stop asking it to (it crashed, or
// someone killed it): the pool and the LISTEN connection reconnect to the same address once it is back. It
// returns when Stop is called.
func (c *Cluster) supervise(exited <-chan struct{}) {
	defer close(c.watching)
	for {
		<-exited
		if c.isStopping() {
			return
		}
		c.opts.Logger.Error("PostgreSQL exited unexpectedly; restarting it", "dir", c.pgdata, "port", c.port)
		backoff := 100 * time.Millisecond
		for {
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
			next, err := c.spawn(ctx)
			cancel()
			if err == nil {
				c.opts.Logger.Info("PostgreSQL restarted", "dir", c.pgdata, "port", c.port, "after", time.Since(began).Round(time.Millisecond))
				exited = next
				if c.isStopping() {
					// Stop ran during the restart and signalled the old, dead process: stop the new one here (Stop
					// waits for this loop to return).
					c.stopRestarted(next)
					return
				}
				break
			}
			if c.isStopping() {
				return
			}
			// A killed postmaster's children may still hold its shared memory for a moment.
			c.opts.Logger.Warn("restarting PostgreSQL failed; retrying", "error", err, "in", backoff)
			time.Sleep(backoff)
			backoff = min(2*backoff, 2*time.Second)
		}
	}
}

// stopRestarted stops a postgres that supervise started after Stop had signalled its predecessor.
func (c *Cluster) stopRestarted(exited <-chan struct{}) {
	c.mu.Lock()
	proc := c.proc
	c.mu.Unlock()
	_ = proc.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = proc.Kill()
		<-exited
	}
}

// isStopping reports whether Stop was called: an exit of postgres is then expected.
func (c *Cluster) isStopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopping
}

func (c *Cluster) prepareDirs() error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.MkdirAll(c.socketDir, 0o755); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return c.chown(c.socketDir)
}

func (c *Cluster) initIfNeeded(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.pgdata, "PG_VERSION")); err == nil {
		return nil
	}
	_ = os.RemoveAll(c.pgdata) // a half-created directory from an interrupted initdb
	if c.opts.InitCache != "" {
		if _, err := os.Stat(filepath.Join(c.opts.InitCache, "PG_VERSION")); err == nil {
			return c.copyDir(ctx, c.opts.InitCache, c.pgdata)
		}
	}
	if err := os.MkdirAll(c.pgdata, 0o700); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := c.chown(c.pgdata); err != nil {
		return err
	}
	args := []string{"-D", c.pgdata, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"}
	if c.opts.NoSync {
		args = append(args, "--no-sync")
	}
	c.opts.Logger.Info("creating a private PostgreSQL cluster", "dir", c.pgdata)
	cmd := c.command(ctx, "initdb", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgcluster: %w", describe(cmd, out, err))
	}
	if c.opts.InitCache != "" {
		c.fillCache(ctx)
	}
	return nil
}

// fillCache copies the new data directory into the cache atomically (copy, then rename), so that concurrent test
// binaries never see a half-written cache.
func (c *Cluster) fillCache(ctx context.Context) {
	tmp := c.opts.InitCache + ".tmp-" + strconv.Itoa(os.Getpid())
	_ = os.MkdirAll(filepath.Dir(tmp), 0o755)
	if err := c.copyDir(ctx, c.pgdata, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return
	}
	if err := os.Rename(tmp, c.opts.InitCache); err != nil {
		_ = os.RemoveAll(tmp)
	}
}

func (c *Cluster) copyDir(ctx context.Context, from, to string) error {
	cmd := exec.CommandContext(ctx, "cp", "-a", from, to)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgcluster: %w", describe(cmd, out, err))
	}
	return nil
}

// reuseRunning connects to a postgres that already runs on this data directory (started by a running ferry serve)
// and clears the lock file of one that died without cleaning up. A postgres that is shutting down (its ferry died:
// the parent-death signal stops it) is waited for, then started afresh.
func (c *Cluster) reuseRunning(ctx context.Context) (bool, error) {
	pidFile := filepath.Join(c.pgdata, "postmaster.pid")
	lines, err := readLines(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("pgcluster: %w", err)
	}
	// postmaster.pid: pid, data dir, start time, port, socket dir, listen address, shmem key, status.
	if len(lines) >= 5 {
		pid, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
		port, _ := strconv.Atoi(strings.TrimSpace(lines[3]))
		if pid > 0 && port > 0 && isPostgres(pid) {
			waitCtx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
			defer cancel()
			gone := pidExited(waitCtx, pid)
			if len(lines) >= 8 && strings.TrimSpace(lines[7]) == "stopping" {
				c.opts.Logger.Info("waiting for the previous PostgreSQL to stop before starting it again", "pid", pid, "dir", c.pgdata)
				select {
				case <-gone:
					return false, c.removeStaleLock(pidFile)
				case <-waitCtx.Done():
					return false, fmt.Errorf("pgcluster: postgres (pid %d) on %s did not finish stopping in %s", pid, c.pgdata, c.opts.StartTimeout)
				}
			}
			c.port = port
			c.socketDir = strings.TrimSpace(lines[4])
			err := c.waitReady(waitCtx, gone)
			if err == nil {
				c.opts.Logger.Info("reusing the running PostgreSQL cluster", "dir", c.pgdata, "port", port)
				return true, nil
			}
			select {
			case <-gone: // it was on its way out: start afresh
				c.opts.Logger.Info("the previous PostgreSQL stopped; starting it again", "pid", pid, "dir", c.pgdata)
				return false, c.removeStaleLock(pidFile)
			default:
			}
			return false, fmt.Errorf("pgcluster: postgres (pid %d) runs on %s but does not accept connections: %w", pid, c.pgdata, err)
		}
	}
	c.opts.Logger.Warn("removing a stale postmaster.pid left by a postgres that is no longer running", "file", pidFile)
	return false, c.removeStaleLock(pidFile)
}

func (c *Cluster) removeStaleLock(pidFile string) error {
	if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pgcluster: removing stale lock file: %w", err)
	}
	return nil
}

// pidExited returns a channel closed once pid is no longer a running postgres (polled), or never if ctx ends first.
func pidExited(ctx context.Context, pid int) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		for isPostgres(pid) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		close(gone)
	}()
	return gone
}

// start starts postgres on a free port and supervises it.
func (c *Cluster) start(ctx context.Context) error {
	port := c.opts.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return fmt.Errorf("pgcluster: finding a free port: %w", err)
		}
	}
	c.port = port
	// autovacuum_naptime 1s: a queue's table churns (every lease and acknowledgement leaves a dead row version,
	// and each dead index entry at the head of the lease index is walked by every lease until vacuum removes it).
	// With the default minute between autovacuum checks, a raw SKIP LOCKED table lost 25 % of its throughput
	// from one 10 s round to the next; checked every second, it lost none.
	args := []string{"-D", c.pgdata, "-p", strconv.Itoa(port), "-k", c.socketDir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "autovacuum_naptime=1s"}
	if c.opts.NoSync {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	} else {
		// A buffer pool that holds a deep queue's hot pages (the head that leases read and the tail that puts
		// write): with the default 128 MB, a queue of 1,000,000 messages (~1.3 GB) was consumed at 79 % of the
		// rate of a queue of 10,000, its pages copied in from the kernel's cache; with 1 GB, at 92 %. Memory is
		// only taken as pages are used. (Test clusters keep the default: their databases are small.)
		args = append(args, "-c", "shared_buffers=1GB")
		// After a crash, PostgreSQL first syncs its whole data directory; file by file (the default) that took
		// 2–3 s of a 3.4 s recovery, one syncfs of the file system 0.5 s. Beside a process writing files without
		// syncing them (which syncfs flushes too), the whole recovery took 6.7 s file by file and 0.9 s with
		// syncfs. (PostgreSQL 14 and later, on Linux.)
		if runtime.GOOS == "linux" && c.majorVersion() >= 14 {
			args = append(args, "-c", "recovery_init_sync_method=syncfs")
		}
	}
	for name, value := range c.opts.Settings {
		args = append(args, "-c", name+"="+value)
	}
	c.args = args
	exited, err := c.spawn(ctx)
	if err != nil {
		return err
	}
	c.watching = make(chan struct{})
	go c.supervise(exited)
	return nil
}

// majorVersion is the PostgreSQL major version of the data directory (its PG_VERSION file), 0 if unreadable.
func (c *Cluster) majorVersion() int {
	raw, err := os.ReadFile(filepath.Join(c.pgdata, "PG_VERSION"))
	if err != nil {
		return 0
	}
	major, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return major
}

// spawn runs postgres with c.args and waits until it accepts connections; it returns the channel closed when it
// exits.
func (c *Cluster) spawn(ctx context.Context) (<-chan struct{}, error) {
	logPath := filepath.Join(c.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	defer logFile.Close()

	cmd := c.command(context.WithoutCancel(ctx), "postgres", c.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group keeps a terminal's Ctrl-C away from postgres (ferry stops it after draining), and
	// Pdeathsig stops postgres when ferry dies without cleaning up: SIGINT, a fast shutdown, which ends the
	// sessions of other clients instead of waiting for them, so that a ferry restarted at once finds it gone.
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	exited := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that forked exits, so that thread stays locked and alive while
		// postgres runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(exited)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("pgcluster: starting postgres: %w", err)
	}
	c.mu.Lock()
	c.proc, c.exited = cmd.Process, exited
	c.mu.Unlock()
	c.opts.Logger.Info("started PostgreSQL", "dir", c.pgdata, "port", c.port, "socketDir", c.socketDir, "log", logPath)
	waitCtx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if err := c.waitReady(waitCtx, exited); err != nil {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		return nil, fmt.Errorf("pgcluster: postgres did not become ready (see %s): %w", logPath, err)
	}
	return exited, nil
}

func (c *Cluster) waitReady(ctx context.Context, exited <-chan struct{}) error {
	admin := c.URL("postgres")
	for {
		conn, err := pgx.Connect(ctx, admin)
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			return errors.New("postgres exited")
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) ensureDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", c.opts.Database).Scan(&exists); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{c.opts.Database}.Sanitize())
	var already interface{ SQLState() string }
	if errors.As(err, &already) && already.SQLState() == "42P04" { // created concurrently
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgcluster: creating database %s: %w", c.opts.Database, err)
	}
	return nil
}

// command runs a PostgreSQL binary, as the unprivileged user when ferry runs as root.
func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary(c.binDir, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.cred != nil {
		cmd.SysProcAttr.Credential = c.cred
		cmd.Dir = c.dir
	}
	return cmd
}

func (c *Cluster) chown(path string) error {
	if c.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

func unprivilegedUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("pgcluster: ferry runs as root, and PostgreSQL refuses to run as root: create a 'postgres' system user " +
			"(installing the postgresql package does) or run ferry as an unprivileged user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// reachable reports whether uid/gid can traverse every existing ancestor of path.
func reachable(path string, uid, gid uint32) bool {
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil {
			perm := st.Mode().Perm()
			sys, _ := st.Sys().(*syscall.Stat_t)
			ok := perm&0o001 != 0
			if sys != nil {
				ok = ok || (sys.Uid == uid && perm&0o100 != 0) || (sys.Gid == gid && perm&0o010 != 0)
			}
			if !ok {
				return false
			}
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// isPostgres reports whether pid is a live postgres process. A zombie is not: a postmaster whose ferry died is
// reparented to init and, once it exits, stays a zombie until init reaps it (seconds under some inits), though it
// holds nothing any more — waiting for it to vanish delayed every restart by that long.
func isPostgres(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return runtime.GOOS != "linux" // no /proc: trust kill(0)
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses, so split at the last ')'.
	open, closing := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || closing < open || len(stat) < closing+3 {
		return false
	}
	comm, state := string(stat[open+1:closing]), stat[closing+2]
	return strings.HasPrefix(comm, "postgres") && state != 'Z' && state != 'X'
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}
