package server

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/migrations"
	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/console"
	"github.com/ferry-mq/ferry/services/controlplane"
	"github.com/ferry-mq/ferry/services/dataplane"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/services/limits"
	"github.com/ferry-mq/ferry/services/maintenance"
	"github.com/ferry-mq/ferry/services/messaging"
	"github.com/ferry-mq/ferry/services/metering"
	"github.com/ferry-mq/ferry/services/push"
	"github.com/ferry-mq/ferry/services/telemetry"
	"github.com/ferry-mq/ferry/tenancy"
)

// Body limits (DESIGN sections 4 and 7).
const (
	ControlPlaneBodyLimit = 1 << 20
	DataPlaneBodyLimit    = 2 << 20
)

// Server is a running ferry node: the HTTP handler and its background workers.
type Server struct {
	cfg        Config
	store      *persistence.Store
	telemetry  *telemetry.Telemetry
	logger     *slog.Logger
	engine     *gin.Engine
	executor   *maintenance.WorkRequestExecutor
	maintainer *maintenance.Maintainer
	messaging  *messaging.Service
	metering   *metering.Meter
	push       *push.Service
	limits     *limits.Service
	operations map[string]string
}

// New builds the server on an open pool. It does not start background work: call Start.
func New(cfg Config, pool *pgxpool.Pool, tel *telemetry.Telemetry, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.Default()
	}
	auth, err := iam.NewAuthenticator(iam.AuthConfig{
		HS256Secret:   []byte(cfg.JWTHS256Secret),
		PublicKeyFile: cfg.JWTPublicKeyFile,
		JWKSURL:       cfg.JWTJWKSURL,
		Algorithms:    cfg.JWTAlgorithms,
		Issuer:        cfg.JWTIssuer,
		Audience:      cfg.JWTAudience,
	})
	if err != nil {
		return nil, err
	}
	store := persistence.NewStore(pool)
	secretCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	receiptKey, err := store.Secrets.GetOrCreate(secretCtx, "receipts")
	cancel()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, store: store, telemetry: tel, logger: logger}
	if s.metering, err = metering.New(cfg.Metrics, store, tel.Meter, logger); err != nil {
		return nil, err
	}
	s.limits = limits.New(cfg.LimitsConfig(), store, logger)
	cfg.Messaging.StoredBytesOf = func(tenancyID string) int64 { return s.limits.Limit(tenancyID, persistence.QuotaStoredBytes) }
	s.messaging = messaging.New(cfg.Messaging, store, pool.Config().ConnString(), receiptKey, tel.Instruments, s.metering, logger)
	cfg.Watch.WatchesOf = func(tenancyID string) int { return int(s.limits.Limit(tenancyID, persistence.QuotaWatches)) }
	s.push = push.New(cfg.Watch, s.messaging, store, tel.Instruments, logger)
	s.messaging.OnConsumersChanged(s.push.ConsumersChanged)
	s.executor = &maintenance.WorkRequestExecutor{Store: store, Purge: s.messaging.Purge, Logger: logger}
	s.maintainer = &maintenance.Maintainer{
		Pool: pool, Store: store, Messages: s.messaging.Messages(), Metering: s.metering, Logger: logger,
		Interval: cfg.MaintenanceInterval,
	}

	spec, err := api.GetSwagger()
	if err != nil {
		return nil, err
	}
	accessCtx, cancelAccess := context.WithTimeout(context.Background(), 10*time.Second)
	access, err := iam.NewAccess(accessCtx, store, logger)
	cancelAccess()
	if err != nil {
		return nil, err
	}
	if access.Metrics, err = iam.NewMetrics(tel.Meter); err != nil {
		return nil, err
	}
	s.messaging.OnConfig(access.OnConfigNotify, access.InvalidateAll)
	access.ResolveGroup = s.messaging.GroupID // one cache of a queue's groups, not a query per pull
	routeOps := map[string]string{}           // "METHOD /gin/route" → operationId
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			routeOps[method+" "+httpapi.GinPath(path)] = op.OperationID
		}
	}
	s.operations = routeOps
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.ContextWithFallback = true
	r.HandleMethodNotAllowed = true
	r.RedirectTrailingSlash = false // an unknown route answers a JSON 404, never an HTML redirect
	r.RedirectFixedPath = false
	r.NoRoute(httpapi.NotFound)
	r.NoMethod(httpapi.MethodNotAllowed)
	// A span per request when spans are recorded; otherwise only the caller's trace context, which producers'
	// messages carry to their consumers (otelgin's unrecorded spans still cost ~5 % of the data plane's CPU).
	// Traces only: httpapi.Metrics records ferry's own request metrics (otelgin's duplicates cost ~2.5 % CPU).
	tracing := httpapi.PropagateTraceContext()
	if tel.Recording {
		tracing = otelgin.Middleware("ferry", otelgin.WithTracerProvider(tel.TracerProvider), otelgin.WithMeterProvider(noop.NewMeterProvider()))
	}
	r.Use(
		httpapi.RequestID(),
		httpapi.Recover(),
		httpapi.BodyReadDeadline(cmp.Or(cfg.BodyReadTimeout, BodyReadTimeoutDefault)),
		tracing,
		httpapi.Metrics(tel.Instruments, func(method, route string) string { return routeOps[method+" "+route] }),
		httpapi.AccessLog(logger),
		httpapi.Authenticate(iam.NewCallers(auth, store.Tenancies.Exists), isPublic),
		// Before the body is read: a refused request costs no buffer.
		httpapi.Limits(s.limits, s.metering, bodyLimit),
		httpapi.BodyLimit(bodyLimit),
		httpapi.NewValidator(spec).Middleware(),
		httpapi.Authorize(access, func(method, route string) string { return routeOps[method+" "+route] }),
		// After IAM: a caller who may not make the call cannot replay someone else's response by its token.
		httpapi.RetryTokens(store.Idempotency),
	)
	cp := controlplane.New(store, tenancy.OCIDs{Realm: cfg.Realm, Region: cfg.Region}, cfg.PublicURL, s.executor.Wake)
	cp.OnQueueConfigChanged(s.messaging.ForgetQueue)
	cp.Access = access
	handlers := &handlers{
		controlPlane: cp,
		dataPlane:    dataplane.New(s.messaging, s.metering),
		operations:   &operations{pool: pool, telemetry: tel, metricsToken: cfg.MetricsToken},
		push:         s.push,
	}
	api.RegisterHandlersWithOptions(r, handlers, api.GinServerOptions{
		ErrorHandler: func(c *gin.Context, err error, _ int) { apierror.Write(c, fault.InvalidParameter("%v", err)) },
	})
	web, err := console.New()
	if err != nil {
		return nil, err
	}
	web.Register(r)
	s.engine = r
	return s, nil
}

// handlers joins the planes into one api.ServerInterface.
type handlers struct {
	*controlPlane
	*dataPlane
	*operations
	push *push.Service
}

// WatchMessages is served by the push service (a WebSocket, not a JSON handler).
func (h *handlers) WatchMessages(c *gin.Context, queueID api.QueueIdPath, params api.WatchMessagesParams) {
	h.push.WatchMessages(c, queueID, params)
}

type (
	controlPlane = controlplane.Handlers
	dataPlane    = dataplane.Handlers
)

var _ api.ServerInterface = (*handlers)(nil)

// Handler is the HTTP handler of both planes.
func (s *Server) Handler() http.Handler { return s.engine }

// Store exposes the repositories (admin commands and tests).
func (s *Server) Store() *persistence.Store { return s.store }

// Start starts the background workers and the LISTEN connection.
func (s *Server) Start(ctx context.Context) {
	s.limits.Start(ctx)
	s.messaging.Start(ctx)
	s.push.Start(ctx)
	s.executor.Start(ctx)
	s.maintainer.Start(ctx)
	s.metering.Start(ctx)
}

// Stop stops the background workers. Safe to call twice.
func (s *Server) Stop() {
	s.maintainer.Stop()
	s.executor.Stop()
	s.push.Stop() // releases the watches' messages: before the listener goes, so other nodes hear of them
	s.messaging.Stop()
	s.metering.Stop() // after the services that count: the last counts are flushed
	s.limits.Stop()
}

// Limits is the node's quotas, rate limits and admission control (tests inspect it).
func (s *Server) Limits() *limits.Service { return s.limits }

// Routes maps every authenticated route ("METHOD /gin/route") to its operationId (the IAM coverage test reads it).
func (s *Server) Routes() map[string]string { return s.operations }

// Messaging is the data plane service (tests and benchmarks inspect it).
func (s *Server) Messaging() *messaging.Service { return s.messaging }

// Metering is the queues' metering (tests flush and sample it directly).
func (s *Server) Metering() *metering.Meter { return s.metering }

// Maintainer is the periodic maintainer (tests drive it directly).
func (s *Server) Maintainer() *maintenance.Maintainer { return s.maintainer }

// Executor is the work request executor (tests drive it directly).
func (s *Server) Executor() *maintenance.WorkRequestExecutor { return s.executor }

// Serve serves HTTP on l until ctx is cancelled, then drains in-flight requests (up to drain) and stops.
func (s *Server) Serve(ctx context.Context, l net.Listener, drain time.Duration) error {
	srv := &http.Server{
		Handler:     s.engine,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	ConfigureHTTP(srv, s.cfg)
	// Watches are hijacked connections that Shutdown does not wait for: close them as the drain starts, so that
	// their messages go to consumers on other nodes at once.
	srv.RegisterOnShutdown(s.push.Stop)
	return serve(ctx, srv, l, drain)
}

// ConfigureHTTP sets the timeouts of the API's http.Server (cmd/ferry's, and the tests' httptest server): headers
// within ReadHeaderTimeout, idle keep-alive connections closed after two minutes. There is no ReadTimeout: it would
// also end long polls and watches (net/http cancels a request whose connection's read deadline passes while it
// runs); the body's deadline is set per request by httpapi.BodyReadDeadline and lifted once the body is read.
func ConfigureHTTP(srv *http.Server, cfg Config) {
	srv.ReadHeaderTimeout = cmp.Or(cfg.ReadHeaderTimeout, ReadHeaderTimeoutDefault)
	srv.IdleTimeout = 2 * time.Minute
}

// MetricsHandler serves the node's metrics (Prometheus text format) to operators: the handler of the metrics
// listener (ServeMetrics), which has no authentication of its own.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.telemetry.MetricsHandler())
	return mux
}

// ServeMetrics serves MetricsHandler on l (FERRY_METRICS_LISTEN) until ctx is cancelled.
func (s *Server) ServeMetrics(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: s.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second}
	return serve(ctx, srv, l, 5*time.Second) // a scrape takes milliseconds
}

// serve runs srv on l until ctx is cancelled, then shuts it down gracefully within drain.
func serve(ctx context.Context, srv *http.Server, l net.Listener, drain time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if errors.Is(<-errc, http.ErrServerClosed) && err == nil {
		return nil
	}
	return err
}

func isPublic(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", "/openapi.yaml":
		return true
	}
	return console.IsConsolePath(path)
}

func bodyLimit(c *gin.Context) int64 {
	if strings.Contains(c.FullPath(), "/messages") {
		return DataPlaneBodyLimit
	}
	return ControlPlaneBodyLimit
}

// operations serves the operational endpoints (no JWT: /metrics checks its own token).
type operations struct {
	pool         *pgxpool.Pool
	telemetry    *telemetry.Telemetry
	metricsToken string
}

func (o *operations) Healthz(c *gin.Context, _ api.HealthzParams) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

func (o *operations) Readyz(c *gin.Context, _ api.ReadyzParams) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if err := o.pool.Ping(ctx); err != nil {
		apierror.Write(c, fault.Unavailable(1, "the database is not reachable"))
		return
	}
	var version int64
	var dirty bool
	err := o.pool.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty)
	if err != nil || dirty || uint(version) < migrations.Latest() {
		apierror.Write(c, fault.Unavailable(5, "the database schema is not migrated to version %d", migrations.Latest()))
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}

// Metrics serves /metrics on the API port only when FERRY_METRICS_TOKEN is set, and only to callers that send it
// as their bearer token: the metrics name tenancies and queues, which strangers must not learn. Without a token
// the route answers 404, as a route that does not exist.
func (o *operations) Metrics(c *gin.Context, _ api.MetricsParams) {
	if o.metricsToken == "" {
		apierror.Write(c, fault.NotFound("/metrics is not served on this port: see FERRY_METRICS_LISTEN"))
		return
	}
	scheme, token, _ := strings.Cut(c.GetHeader("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(token), []byte(o.metricsToken)) != 1 {
		apierror.Write(c, fault.NotAuthenticated("/metrics needs the metrics token (FERRY_METRICS_TOKEN) as its bearer token"))
		return
	}
	o.telemetry.MetricsHandler().ServeHTTP(c.Writer, c.Request)
}

func (o *operations) GetOpenAPISpec(c *gin.Context, _ api.GetOpenAPISpecParams) {
	c.Data(http.StatusOK, "application/yaml", openapi.Spec)
}
