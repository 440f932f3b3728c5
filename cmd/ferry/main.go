// Command ferry is the ferry server and its admin commands:
//
//	ferry serve [--dev]                       serve both planes (migrates first)
//	ferry migrate [up|down [N]|version]       manage the schema
//	ferry tenancy create --name NAME          create a tenancy (or print the existing one) as JSON
//	ferry token --tenancy OCID --subject S [--group G]... [--ttl 1h]
//	                                          print a signed HS256 token
//	ferry quota list --tenancy OCID           a tenancy's quotas, values and use, as JSON
//	ferry quota set --tenancy OCID --name NAME --value N|default
//	                                          change a quota (running nodes apply it within seconds)
//	ferry usage --tenancy OCID [--since T]    a tenancy's hourly usage per queue, as JSON
//
// Configuration comes from the environment (services/server.Config). Without FERRY_DATABASE_URL every command
// uses the private PostgreSQL cluster in FERRY_DATA_DIR: the one a running `ferry serve` started, or its own.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ferry:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usage()
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:])
	case "migrate":
		return migrate(ctx, args[1:])
	case "tenancy":
		if len(args) < 2 || args[1] != "create" {
			return fmt.Errorf("usage: ferry tenancy create --name NAME")
		}
		return tenancyCreate(ctx, args[2:])
	case "token":
		return token(ctx, args[1:])
	case "quota":
		return quota(ctx, args[1:])
	case "usage":
		return usageReport(ctx, args[1:])
	case "help", "-h", "--help":
		return usage()
	}
	return fmt.Errorf("unknown command %q (try ferry help)", args[0])
}

func usage() error {
	fmt.Print(`usage:
  ferry serve [--dev]                     serve both planes (migrates first); --dev creates the "dev" tenancy and prints a token
  ferry migrate [up|down [N]|version]     manage the schema (default up)
  ferry tenancy create --name NAME        create a tenancy, or print the existing one, as JSON
  ferry token --tenancy OCID --subject S [--group G]... [--ttl 1h]
                                          print a signed HS256 token
  ferry quota list --tenancy OCID         the tenancy's quotas as JSON: [{"name","value","used"}]
  ferry quota set --tenancy OCID --name NAME --value N|default
                                          change a quota; running nodes apply it within seconds
  ferry usage --tenancy OCID [--since 24h|RFC3339]
                                          the tenancy's hourly usage per queue as JSON

environment: FERRY_DATABASE_URL (unset = private cluster in FERRY_DATA_DIR, default .data), FERRY_LISTEN
(default 127.0.0.1:8080), FERRY_METRICS_LISTEN (default 127.0.0.1:9464; empty: off), FERRY_METRICS_TOKEN,
FERRY_JWT_HS256_SECRET, FERRY_JWT_PUBLIC_KEY_FILE, FERRY_JWT_JWKS_URL, FERRY_REALM,
FERRY_REGION, FERRY_PUBLIC_URL, FERRY_QUOTA_*, FERRY_QUEUE_*_PER_SECOND, FERRY_MAX_INFLIGHT_BYTES, OTEL_*
(see README.md and docs/limits.md)
`)
	return nil
}
