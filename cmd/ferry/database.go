package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferry-mq/ferry/persistence/pgcluster"
	"github.com/ferry-mq/ferry/services/server"
)

// database resolves where the database is: FERRY_DATABASE_URL, or the embedded private cluster (started here when
// no running ferry serve started it). release stops a cluster this process started.
func database(ctx context.Context, cfg server.Config, logger *slog.Logger) (url string, release func(), err error) {
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL, func() {}, nil
	}
	// FERRY_PG_SETTINGS passes extra postgres settings to the private cluster ("name=value,name=value"), e.g.
	// shared_preload_libraries=pg_stat_statements for profiling.
	settings := map[string]string{}
	for _, kv := range strings.Split(os.Getenv("FERRY_PG_SETTINGS"), ",") {
		if name, value, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			settings[name] = value
		}
	}
	cluster, err := pgcluster.Open(ctx, pgcluster.Options{Dir: filepath.Join(cfg.DataDir, "postgres"), Logger: logger, Settings: settings})
	if err != nil {
		return "", nil, err
	}
	return cluster.URL(""), func() {
		if err := cluster.Stop(context.Background()); err != nil {
			logger.Error("stopping PostgreSQL", "error", err)
		}
	}, nil
}

// devSecret returns the HS256 secret: FERRY_JWT_HS256_SECRET, or with the embedded default a random secret
// created once and kept in FERRY_DATA_DIR (so that `ferry token` works without setup).
func devSecret(cfg server.Config) (string, error) {
	if cfg.JWTHS256Secret != "" || cfg.DatabaseURL != "" {
		return cfg.JWTHS256Secret, nil
	}
	path := filepath.Join(cfg.DataDir, "jwt-hs256-secret")
	if data, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(data)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return "", err
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	secret := hex.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, os.ErrExist) { // created concurrently
		data, err := os.ReadFile(path)
		return strings.TrimSpace(string(data)), err
	}
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	defer f.Close()
	_, err = f.WriteString(secret + "\n")
	return secret, err
}

func loadConfig() (server.Config, error) {
	cfg, err := server.LoadConfig()
	if err != nil {
		return cfg, err
	}
	cfg.JWTHS256Secret, err = devSecret(cfg)
	return cfg, err
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}
