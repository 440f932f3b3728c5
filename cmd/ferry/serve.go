package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"time"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/migrations"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/services/telemetry"
	"github.com/ferry-mq/ferry/tenancy"
)

// version is set at build time (-ldflags "-X main.version=…").
var version = "dev"

func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dev := fs.Bool("dev", false, `create the "dev" tenancy and print an admin token and a curl example`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		// The hot path allocates request-sized garbage (JSON bodies); the live heap is small. Collecting at 4x
		// the live heap instead of 2x halves the GC's share of the CPU (measured ~15 % at 5 k msgs/s).
		debug.SetGCPercent(400)
	}
	logger := newLogger(cfg.LogLevel)
	// What logs through slog's default (the HTTP error mapping's 500s, libraries) goes to ferry's log too, at its
	// level.
	slog.SetDefault(logger)
	url, release, err := database(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer release()
	if err := migrations.Up(ctx, url); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx, "ferry", version)
	if err != nil {
		return err
	}
	defer func() { _ = tel.Shutdown(context.Background()) }()
	pool, err := persistence.Connect(ctx, url, cfg.DBMaxConns, persistence.WithMeter(tel.Meter))
	if err != nil {
		return err
	}
	defer pool.Close()
	srv, err := server.New(cfg, pool, tel, logger)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	var metricsListener net.Listener
	if cfg.MetricsListen != "" {
		if metricsListener, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			l.Close()
			return fmt.Errorf("listening for metrics on %s: %w", cfg.MetricsListen, err)
		}
	}
	if *dev {
		if err := printDevWelcome(ctx, cfg, srv.Store()); err != nil {
			return err
		}
	}
	if addr := os.Getenv("FERRY_PPROF_LISTEN"); addr != "" {
		// Profiling on a separate (loopback) listener, never on the API port.
		go func() { logger.Warn("pprof stopped", "error", http.ListenAndServe(addr, pprofMux())) }()
	}
	srv.Start(ctx)
	defer srv.Stop()
	logger.Info("ferry serving", "listen", cfg.Listen, "publicURL", cfg.PublicURL, "metrics", cfg.MetricsListen)
	// The metrics listener lives and stops with the API: a failure of either stops both.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	metricsDone := make(chan error, 1)
	if metricsListener != nil {
		go func() {
			err := srv.ServeMetrics(ctx, metricsListener)
			cancel()
			metricsDone <- err
		}()
	} else {
		metricsDone <- nil
	}
	err = srv.Serve(ctx, l, 20*time.Second)
	cancel()
	if merr := <-metricsDone; merr != nil {
		err = errors.Join(err, fmt.Errorf("metrics listener: %w", merr))
	}
	logger.Info("ferry stopped")
	return err
}

func printDevWelcome(ctx context.Context, cfg server.Config, store *persistence.Store) error {
	if cfg.JWTHS256Secret == "" {
		return fmt.Errorf("--dev needs an HS256 secret (FERRY_JWT_HS256_SECRET, or the embedded default)")
	}
	ocids := tenancy.OCIDs{Realm: cfg.Realm, Region: cfg.Region}
	t, _, err := tenancy.Create(ctx, store.Tenancies, ocids, "dev")
	if err != nil {
		return err
	}
	tok, err := iam.IssueHS256([]byte(cfg.JWTHS256Secret), t.ID, "admin", []string{"Administrators"}, 24*time.Hour)
	if err != nil {
		return err
	}
	base := cfg.PublicURL
	fmt.Printf(`
ferry is starting on %[1]s

  web console: %[1]s/console  (sign in by pasting the admin token below)

  tenancy "dev": %[2]s
  admin token (24 h, group Administrators), for the console, curl and ferryctl:

export FERRY_ENDPOINT=%[1]s FERRY_TOKEN=%[3]s

  try it:

bin/ferryctl queue list -o table

curl -s -H "Authorization: Bearer $FERRY_TOKEN" -H 'content-type: application/json' \
  -d '{"compartmentId":"%[2]s","displayName":"hello"}' %[1]s/20210201/queues

curl -s -H "Authorization: Bearer $FERRY_TOKEN" '%[1]s/20210201/queues?compartmentId=%[2]s'

  the API: %[1]s/openapi.yaml   metrics (operators): %[4]s
  a new token: ferry token --tenancy %[2]s --subject you --group Administrators

`, base, t.ID, tok, metricsURL(cfg))
	return nil
}

// metricsURL is where this node's metrics are, for the welcome text.
func metricsURL(cfg server.Config) string {
	switch {
	case cfg.MetricsListen != "":
		return "http://" + cfg.MetricsListen + "/metrics"
	case cfg.MetricsToken != "":
		return cfg.PublicURL + "/metrics (with the FERRY_METRICS_TOKEN bearer token)"
	}
	return "not served (FERRY_METRICS_LISTEN is empty)"
}

func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
