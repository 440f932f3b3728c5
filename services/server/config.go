// Package server wires ferry together: configuration, the router with its middleware chain, the control and data
// plane handlers, and the background workers. cmd/ferry and the end-to-end tests both build the server here.
package server

import (
	"fmt"
	"os"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/ferry-mq/ferry/services/limits"
	"github.com/ferry-mq/ferry/services/messaging"
	"github.com/ferry-mq/ferry/services/metering"
	"github.com/ferry-mq/ferry/services/push"
)

// Config is ferry's configuration, read from the environment (DESIGN section 11).
type Config struct {
	// DatabaseURL is a postgres:// URL. Empty = the embedded private cluster in DataDir.
	DatabaseURL string `env:"FERRY_DATABASE_URL"`
	// DataDir holds the embedded cluster and the development JWT secret. Default ".data".
	DataDir string `env:"FERRY_DATA_DIR" envDefault:".data"`
	// Listen is the HTTP listen address. Default "127.0.0.1:8080".
	Listen string `env:"FERRY_LISTEN" envDefault:"127.0.0.1:8080"`
	// MetricsListen is the operators' listener of GET /metrics, apart from the API. Default MetricsListenDefault
	// (loopback); set and empty, no listener (LoadConfig tells unset from empty).
	MetricsListen string `env:"FERRY_METRICS_LISTEN"`
	// MetricsToken, when set, also serves GET /metrics on the API port to callers that send "Authorization:
	// Bearer <MetricsToken>" (for a deployment that can expose one port only). Empty: the API port has no
	// /metrics (404).
	MetricsToken string `env:"FERRY_METRICS_TOKEN"`
	// PublicURL is the base URL clients reach this service at (a queue's messagesEndpoint). Default http://Listen.
	PublicURL string `env:"FERRY_PUBLIC_URL"`
	// JWT verification (DESIGN section 5).
	JWTHS256Secret   string   `env:"FERRY_JWT_HS256_SECRET"`
	JWTPublicKeyFile string   `env:"FERRY_JWT_PUBLIC_KEY_FILE"`
	JWTJWKSURL       string   `env:"FERRY_JWT_JWKS_URL"`
	JWTAlgorithms    []string `env:"FERRY_JWT_ALGORITHMS"` // default: what the configured keys verify
	JWTIssuer        string   `env:"FERRY_JWT_ISSUER"`
	JWTAudience      string   `env:"FERRY_JWT_AUDIENCE"`
	// Realm and Region go into every OCID. Defaults "ferry" and "local".
	Realm  string `env:"FERRY_REALM" envDefault:"ferry"`
	Region string `env:"FERRY_REGION" envDefault:"local"`
	// DBMaxConns caps the pool. Default 20.
	DBMaxConns int32 `env:"FERRY_DB_MAX_CONNS" envDefault:"20"`
	// DBCoalesce merges concurrent puts, leases and acknowledgements of a queue into shared statements (group
	// commit). Default true; false is for measurements.
	DBCoalesce bool `env:"FERRY_DB_COALESCE" envDefault:"true"`
	// DBAsyncCommit lets leases and acknowledgements commit without waiting for their WAL: faster, but a
	// database crash can undo acknowledged deletes and lower delivery counts. Default false; true is for
	// measuring what durability costs.
	DBAsyncCommit bool `env:"FERRY_DB_ASYNC_COMMIT" envDefault:"false"`
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string `env:"FERRY_LOG_LEVEL" envDefault:"info"`
	// ReadHeaderTimeout bounds how long a client may take to send a request's headers. Default
	// ReadHeaderTimeoutDefault.
	ReadHeaderTimeout time.Duration `env:"FERRY_READ_HEADER_TIMEOUT"`
	// BodyReadTimeout bounds how long a client may take to send a request's body, from the end of its headers; a
	// body still arriving then answers 408 and the connection is closed. Long polls and watches are not
	// affected: the deadline ends once the body is read. Default BodyReadTimeoutDefault.
	BodyReadTimeout time.Duration `env:"FERRY_BODY_READ_TIMEOUT"`
	// MaintenanceInterval is how often retention and cleanup run. Default 10s.
	MaintenanceInterval time.Duration `env:"FERRY_MAINTENANCE_INTERVAL" envDefault:"10s"`
	// Messaging tunes the data plane (wake-ups, fallback polling); tests shorten it.
	Messaging messaging.Config
	// Watch tunes the push consumers (pings, heartbeat, leases, caps): FERRY_WATCH_*.
	Watch push.Config
	// Limits holds the quotas' defaults (FERRY_QUOTA_*), the queues' rate limits (FERRY_QUEUE_*), the bound on
	// request bytes in flight (FERRY_MAX_INFLIGHT_BYTES) and the refresh of the quota cache
	// (FERRY_LIMITS_REFRESH): docs/limits.md.
	Limits limits.Config
	// Metrics tunes the queues' metrics (rollups, their retention, the per-queue series of /metrics):
	// FERRY_METRICS_*.
	Metrics metering.Config
}

// LimitsConfig is Limits with the watches' quota defaulting to FERRY_WATCH_MAX_PER_TENANCY, the older name of
// that default: what the nodes enforce and `ferry quota list` shows.
func (c Config) LimitsConfig() limits.Config {
	l := c.Limits
	if l.Watches == 0 {
		l.Watches = int64(c.Watch.MaxPerTenancy)
	}
	return l
}

// Read timeouts: a client trickling its headers or body (1 byte every 2 s) would otherwise hold a connection and
// a goroutine indefinitely. 30 s lets a 2 MiB body arrive at 70 KB/s.
const (
	ReadHeaderTimeoutDefault = 10 * time.Second
	BodyReadTimeoutDefault   = 30 * time.Second
)

// MetricsListenDefault is where /metrics is served when FERRY_METRICS_LISTEN is unset: loopback, so that the
// metrics (which name every tenancy's busiest queues) reach only a Prometheus on the same host or one the operator
// lets in on purpose. 9464 is the port OpenTelemetry's Prometheus exporters use by convention.
const MetricsListenDefault = "127.0.0.1:9464"

// LoadConfig reads the environment.
func LoadConfig() (Config, error) {
	cfg, err := env.ParseAs[Config]()
	if err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	if _, set := os.LookupEnv("FERRY_METRICS_LISTEN"); !set {
		cfg.MetricsListen = MetricsListenDefault // not an envDefault: that would also replace an empty value
	}
	cfg.Messaging.Uncoalesced = !cfg.DBCoalesce
	cfg.Messaging.AsyncCommit = cfg.DBAsyncCommit
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + cfg.Listen
	}
	return cfg, nil
}
