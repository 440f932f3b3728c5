package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/migrations"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/tenancy"
)

// adminDatabase is the configuration and the database URL of an admin command (with the embedded default, the
// cluster a running ferry serve started, or one started for the command); call release when done.
func adminDatabase(ctx context.Context) (cfg server.Config, url string, release func(), err error) {
	if cfg, err = loadConfig(); err != nil {
		return cfg, "", nil, err
	}
	url, release, err = database(ctx, cfg, newLogger("warn"))
	return cfg, url, release, err
}

func migrate(ctx context.Context, args []string) error {
	_, url, release, err := adminDatabase(ctx)
	if err != nil {
		return err
	}
	defer release()
	action := "up"
	if len(args) > 0 {
		action = args[0]
	}
	switch action {
	case "up":
		if err := migrations.Up(ctx, url); err != nil {
			return err
		}
	case "down":
		steps := 1
		if len(args) > 1 {
			if steps, err = strconv.Atoi(args[1]); err != nil || steps < 1 {
				return errors.New("usage: ferry migrate down [N] (N ≥ 1)")
			}
		}
		if err := migrations.Down(ctx, url, steps); err != nil {
			return err
		}
	case "version":
	default:
		return fmt.Errorf("usage: ferry migrate [up|down [N]|version]")
	}
	v, dirty, err := migrations.Version(ctx, url)
	if err != nil {
		return err
	}
	fmt.Printf("schema version %d of %d (dirty=%v)\n", v, migrations.Latest(), dirty)
	return nil
}

func tenancyCreate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tenancy create", flag.ContinueOnError)
	name := fs.String("name", "", "tenancy name (unique)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" || len(*name) > 255 {
		return errors.New("usage: ferry tenancy create --name NAME (1..255 characters)")
	}
	cfg, url, release, err := adminDatabase(ctx)
	if err != nil {
		return err
	}
	defer release()
	if err := migrations.Up(ctx, url); err != nil {
		return err
	}
	pool, err := persistence.Connect(ctx, url, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	ocids := tenancy.OCIDs{Realm: cfg.Realm, Region: cfg.Region}
	t, _, err := tenancy.Create(ctx, persistence.NewStore(pool).Tenancies, ocids, *name)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"id": t.ID, "name": t.Name, "timeCreated": t.TimeCreated})
}

type repeated []string

func (r *repeated) String() string     { return fmt.Sprint(*r) }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func token(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	tenancyID := fs.String("tenancy", "", "tenancy OCID")
	subject := fs.String("subject", "", "principal (sub claim)")
	ttl := fs.Duration("ttl", time.Hour, "lifetime")
	var groups repeated
	fs.Var(&groups, "group", "group name (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !tenancy.IsOCID(*tenancyID, tenancy.TypeTenancy) || *subject == "" || *ttl <= 0 {
		return errors.New("usage: ferry token --tenancy OCID --subject S [--group G]... [--ttl 1h]")
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if cfg.JWTHS256Secret == "" {
		return errors.New("no HS256 secret: set FERRY_JWT_HS256_SECRET (or use the embedded default database)")
	}
	tok, err := iam.IssueHS256([]byte(cfg.JWTHS256Secret), *tenancyID, *subject, groups, *ttl)
	if err != nil {
		return err
	}
	fmt.Println(tok)
	return nil
}
