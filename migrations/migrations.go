// Package migrations holds ferry's versioned schema (NNNN_name.up.sql / .down.sql), embedded in the binary and
// applied by `ferry migrate` and on `ferry serve` start. golang-migrate applies them under an advisory lock, so
// several nodes starting at once migrate once.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers the pgx5:// scheme
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

//go:embed *.sql
var files embed.FS

var versionPattern = regexp.MustCompile(`^(\d+)_.*\.up\.sql$`)

// Latest is the highest migration version embedded in this binary.
func Latest() uint {
	entries, _ := fs.ReadDir(files, ".")
	var versions []uint
	for _, e := range entries {
		if m := versionPattern.FindStringSubmatch(e.Name()); m != nil {
			v, _ := strconv.ParseUint(m[1], 10, 32)
			versions = append(versions, uint(v))
		}
	}
	if len(versions) == 0 {
		return 0
	}
	return slices.Max(versions)
}

// Up applies every migration not yet applied to the database at databaseURL (a postgres:// URL).
func Up(ctx context.Context, databaseURL string) error {
	return run(ctx, databaseURL, func(m *migrate.Migrate) error { return m.Up() })
}

// Down reverts the newest `steps` migrations (all of them when steps <= 0).
func Down(ctx context.Context, databaseURL string, steps int) error {
	return run(ctx, databaseURL, func(m *migrate.Migrate) error {
		if steps <= 0 {
			return m.Down()
		}
		return m.Steps(-steps)
	})
}

// Version reports the applied version and whether the last migration failed half-way (dirty).
func Version(ctx context.Context, databaseURL string) (version uint, dirty bool, err error) {
	err = run(ctx, databaseURL, func(m *migrate.Migrate) error {
		version, dirty, err = m.Version()
		if errors.Is(err, migrate.ErrNilVersion) {
			return nil
		}
		return err
	})
	return version, dirty, err
}

func run(ctx context.Context, databaseURL string, do func(*migrate.Migrate) error) error {
	src, err := iofs.New(files, ".")
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, toDriverURL(databaseURL))
	if err != nil {
		return fmt.Errorf("migrations: connecting: %w", err)
	}
	defer m.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			m.GracefulStop <- true
		case <-done:
		}
	}()
	if err := do(m); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrations: %w", err)
	}
	return nil
}

// toDriverURL turns a postgres:// (or key=value) connection string into golang-migrate's pgx5:// form.
func toDriverURL(databaseURL string) string {
	for _, prefix := range []string{"postgres://", "postgresql://"} {
		if strings.HasPrefix(databaseURL, prefix) {
			return "pgx5://" + strings.TrimPrefix(databaseURL, prefix)
		}
	}
	return databaseURL
}
