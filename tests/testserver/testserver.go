// Package testserver starts a real ferry server for black-box tests: its own database (cloned from the migrated
// template by persistence/testdb), the real router behind an httptest server, and the background workers. Tests
// talk to it over HTTP through the generated Go SDK.
package testserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/persistence/testdb"
	"github.com/ferry-mq/ferry/services/metering"
	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/services/telemetry"
	"github.com/ferry-mq/ferry/tenancy"
	"github.com/ferry-mq/ferry/tests/e2e"
)

// Server is a started ferry node.
type Server struct {
	URL         string // base URL, e.g. http://127.0.0.1:PORT
	MetricsURL  string // the operators' metrics listener (FERRY_METRICS_LISTEN's), e.g. http://127.0.0.1:PORT/metrics
	DatabaseURL string
	Secret      []byte // HS256 secret its tokens are signed with
	Pool        *pgxpool.Pool
	Node        *server.Server
	HTTP        *httptest.Server
	// Metrics reads every instrument as OTel sees it (names, descriptions, units), beside the Prometheus exporter.
	Metrics *sdkmetric.ManualReader
}

// Option adjusts the configuration before the server is built.
type Option func(*server.Config)

// WithDatabase makes the server use an existing database (a second node on the same database).
func WithDatabase(url string) Option { return func(c *server.Config) { c.DatabaseURL = url } }

// WithSecret sets the HS256 secret (nodes of one deployment share it).
func WithSecret(secret []byte) Option {
	return func(c *server.Config) { c.JWTHS256Secret = string(secret) }
}

// Start starts a server on a fresh database; everything is torn down when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	cfg := server.Config{
		JWTHS256Secret: hex.EncodeToString(secret),
		Realm:          tenancy.RealmDefault,
		Region:         tenancy.RegionDefault,
		DBMaxConns:     20,
		Metrics:        metering.Config{Rollups: true},
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = testdb.New(t)
	}
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.Setup(ctx, "ferry-test", "test", telemetry.WithMetricReader(reader))
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	pool, err := persistence.Connect(ctx, cfg.DatabaseURL, cfg.DBMaxConns, persistence.WithMeter(tel.Meter))
	if err != nil {
		_ = tel.Shutdown(ctx)
		t.Fatalf("testserver: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	// PublicURL is only known once the listener exists: build the handler behind a switch.
	var handler http.Handler
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	server.ConfigureHTTP(hs.Config, cfg) // the timeouts of cmd/ferry's server
	hs.Start()
	cfg.PublicURL = hs.URL
	node, err := server.New(cfg, pool, tel, logger)
	if err != nil {
		hs.Close()
		t.Fatalf("testserver: %v", err)
	}
	handler = node.Handler()
	metrics := httptest.NewServer(node.MetricsHandler()) // as cmd/ferry serves it on FERRY_METRICS_LISTEN
	node.Start(ctx)
	s := &Server{URL: hs.URL, MetricsURL: metrics.URL + "/metrics", DatabaseURL: cfg.DatabaseURL,
		Secret: []byte(cfg.JWTHS256Secret), Pool: pool, Node: node, HTTP: hs, Metrics: reader}
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		metrics.Close()
		node.Stop()
		pool.Close()
		_ = tel.Shutdown(context.Background())
	})
	return s
}

// Tenancy creates a tenancy (and its root compartment) and returns its OCID.
func (s *Server) Tenancy(t testing.TB, name string) string {
	t.Helper()
	ocids := tenancy.OCIDs{Realm: tenancy.RealmDefault, Region: tenancy.RegionDefault}
	tn, _, err := tenancy.Create(context.Background(), persistence.NewStore(s.Pool).Tenancies, ocids, name)
	if err != nil {
		t.Fatalf("testserver: creating tenancy: %v", err)
	}
	return tn.ID
}

// Token signs a one-hour token for subject in tenancy.
func (s *Server) Token(t testing.TB, tenancyID, subject string, groups ...string) string {
	t.Helper()
	tok, err := iam.IssueHS256(s.Secret, tenancyID, subject, groups, time.Hour)
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	return tok
}

// Client is an SDK client that sends token as its bearer token (none when empty).
func (s *Server) Client(t testing.TB, token string) *e2e.Client {
	t.Helper()
	return e2e.NewClient(t, s.URL, token)
}

// Admin creates a tenancy and returns its OCID and an SDK client for an Administrators member in it.
func (s *Server) Admin(t testing.TB, name string) (tenancyID string, client *e2e.Client) {
	t.Helper()
	tenancyID = s.Tenancy(t, name)
	return tenancyID, s.AdminOf(t, tenancyID)
}

// AdminOf is an SDK client for an Administrators member of an existing tenancy.
func (s *Server) AdminOf(t testing.TB, tenancyID string) *e2e.Client {
	t.Helper()
	return s.Client(t, s.Token(t, tenancyID, "admin", "Administrators"))
}

// Peer starts another node on s's database, accepting s's tokens: a second ferry process of the same cluster.
func (s *Server) Peer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	return Start(t, append([]Option{WithDatabase(s.DatabaseURL), WithSecret(s.Secret)}, opts...)...)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
