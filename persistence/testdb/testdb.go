// Package testdb gives each test its own real PostgreSQL database: one private cluster per test binary (started
// on first use, stopped by Main), a template database migrated once, and a fresh clone of it per test (CREATE
// DATABASE … TEMPLATE, tens of milliseconds). Nothing is mocked.
package testdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/ferry-mq/ferry/migrations"
	"github.com/ferry-mq/ferry/persistence/pgcluster"
)

const templateDatabase = "ferry_template"

var (
	once     sync.Once
	cluster  *pgcluster.Cluster
	dir      string
	startErr error
	cloneMu  sync.Mutex // CREATE DATABASE … TEMPLATE needs the template to be idle
	counter  atomic.Int64
)

// Main runs the package's tests, stops the cluster, and then fails the run if a goroutine was left behind
// (goleak; options add goroutines to ignore). Call it from TestMain.
func Main(m *testing.M, options ...goleak.Option) {
	code := m.Run()
	if cluster != nil {
		_ = cluster.Stop(context.Background())
	}
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	// After the cluster's stop, which ends the goroutines that wait for its processes. Only a passing run is
	// checked: a failed test may legitimately leave a goroutine behind, and its failure is what matters.
	if code == 0 {
		if err := goleak.Find(options...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left behind after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Cluster starts (once) and returns the test binary's private cluster.
func Cluster(t testing.TB) *pgcluster.Cluster {
	t.Helper()
	once.Do(start)
	if startErr != nil {
		t.Fatalf("testdb: private PostgreSQL cluster: %v", startErr)
	}
	return cluster
}

// New creates a database for this test, cloned from the migrated template, dropped when the test ends, and
// returns its connection string.
func New(t testing.TB) string {
	t.Helper()
	c := Cluster(t)
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), counter.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer conn.Close(ctx)
	cloneMu.Lock()
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+templateDatabase)
	cloneMu.Unlock()
	if err != nil {
		t.Fatalf("testdb: creating %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return c.URL(name)
}

func start() {
	var err error
	dir, err = os.MkdirTemp("", "ferry-test-pg-")
	if err != nil {
		startErr = err
		return
	}
	if err = os.Chmod(dir, 0o755); err != nil { // the postgres user must reach it when tests run as root
		startErr = err
		return
	}
	binDir, err := pgcluster.FindBinaries()
	if err != nil {
		startErr = err
		return
	}
	sum := sha256.Sum256([]byte(binDir))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, startErr = pgcluster.Open(ctx, pgcluster.Options{
		Dir:       dir,
		Database:  templateDatabase,
		NoSync:    true,
		InitCache: filepath.Join(os.TempDir(), "ferry-test-initdb-"+hex.EncodeToString(sum[:6])),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if startErr != nil {
		return
	}
	startErr = migrations.Up(ctx, cluster.URL(templateDatabase))
}
