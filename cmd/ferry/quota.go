package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/migrations"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/messaging"
	"github.com/ferry-mq/ferry/tenancy"
)

// adminStore opens the store of an admin command (migrated first); call release when done. The quota defaults
// are this command's configuration's (FERRY_QUOTA_*): the same environment as the nodes' shows what they enforce.
func adminStore(ctx context.Context) (store *persistence.Store, release func(), err error) {
	cfg, url, releaseDB, err := adminDatabase(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := migrations.Up(ctx, url); err != nil {
		releaseDB()
		return nil, nil, err
	}
	var pool *pgxpool.Pool
	if pool, err = persistence.Connect(ctx, url, 2); err != nil {
		releaseDB()
		return nil, nil, err
	}
	store = persistence.NewStore(pool)
	store.Quotas.SetDefaults(cfg.LimitsConfig().QuotaDefaults())
	return store, func() { pool.Close(); releaseDB() }, nil
}

// quota runs `ferry quota list|set`.
func quota(ctx context.Context, args []string) error {
	const usageText = "usage: ferry quota list --tenancy OCID | ferry quota set --tenancy OCID --name NAME --value N|default"
	if len(args) == 0 {
		return errors.New(usageText)
	}
	fs := flag.NewFlagSet("quota "+args[0], flag.ContinueOnError)
	tenancyID := fs.String("tenancy", "", "tenancy OCID")
	name := fs.String("name", "", fmt.Sprintf("quota name, one of %v", persistence.QuotaNames))
	value := fs.String("value", "", `the new value (0 or more), or "default" to remove the override`)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if !tenancy.IsOCID(*tenancyID, tenancy.TypeTenancy) {
		return errors.New(usageText)
	}
	switch args[0] {
	case "list":
		store, release, err := adminStore(ctx)
		if err != nil {
			return err
		}
		defer release()
		list, err := store.Quotas.List(ctx, *tenancyID, int32(messaging.WatchLiveness/time.Second))
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(list)
	case "set":
		if !persistence.IsQuota(*name) {
			return fmt.Errorf("--name: one of %v", persistence.QuotaNames)
		}
		var n int64
		if *value != "default" {
			if _, err := fmt.Sscan(*value, &n); err != nil || n < 0 {
				return errors.New(`--value: a number (0 or more) or "default"`)
			}
		}
		store, release, err := adminStore(ctx)
		if err != nil {
			return err
		}
		defer release()
		if _, err := store.Quotas.List(ctx, *tenancyID, 0); err != nil { // the tenancy must exist
			return err
		}
		if *value == "default" {
			err = store.Quotas.Reset(ctx, *tenancyID, *name)
		} else {
			err = store.Quotas.Set(ctx, *tenancyID, *name, n)
		}
		if err != nil {
			return err
		}
		list, err := store.Quotas.List(ctx, *tenancyID, int32(messaging.WatchLiveness/time.Second))
		if err != nil {
			return err
		}
		for _, q := range list {
			if q.Name == *name {
				return json.NewEncoder(os.Stdout).Encode(q)
			}
		}
		return nil
	}
	return errors.New(usageText)
}

// usageReport runs `ferry usage --tenancy OCID [--since TIME]`: the tenancy's hourly usage per queue as JSON.
func usageReport(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	tenancyID := fs.String("tenancy", "", "tenancy OCID")
	since := fs.String("since", "", "RFC 3339 time or a duration back from now (e.g. 24h); default 24h")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !tenancy.IsOCID(*tenancyID, tenancy.TypeTenancy) {
		return errors.New("usage: ferry usage --tenancy OCID [--since 2026-12-01T00:00:00Z|24h]")
	}
	from := time.Now().Add(-24 * time.Hour)
	if *since != "" {
		if d, err := time.ParseDuration(*since); err == nil {
			from = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, *since); err == nil {
			from = t
		} else {
			return errors.New("--since: an RFC 3339 time or a duration")
		}
	}
	store, release, err := adminStore(ctx)
	if err != nil {
		return err
	}
	defer release()
	rows, err := store.Usage.Of(ctx, *tenancyID, from)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(rows)
}
