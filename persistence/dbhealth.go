package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// databaseHealth reads, at each collection, what decides whether vacuum keeps up with the message tables: their
// live and dead row versions (all partitions of each together), and the age of the oldest open transaction of a
// client of the database. Every lease and acknowledgement leaves a dead row version that the next leases walk
// until vacuum removes it; a transaction left open (a stuck client, a forgotten psql session) stops vacuum from
// removing any row version newer than it, so dead rows pile up and leases slow down until it ends.
const databaseHealth = `
SELECT coalesce(sum(s.n_live_tup) FILTER (WHERE t.name = 'messages'), 0)::bigint,
	coalesce(sum(s.n_dead_tup) FILTER (WHERE t.name = 'messages'), 0)::bigint,
	coalesce(sum(s.n_live_tup) FILTER (WHERE t.name = 'message_bodies'), 0)::bigint,
	coalesce(sum(s.n_dead_tup) FILTER (WHERE t.name = 'message_bodies'), 0)::bigint,
	(SELECT coalesce(extract(epoch FROM now() - min(a.xact_start)), 0)::float8 FROM pg_stat_activity a
		WHERE a.datname = current_database() AND a.backend_type = 'client backend' AND a.xact_start IS NOT NULL
			AND a.pid <> pg_backend_pid())
FROM (VALUES ('messages'), ('message_bodies')) AS t(name)
CROSS JOIN pg_partition_tree(t.name::regclass) p
LEFT JOIN pg_stat_user_tables s ON s.relid = p.relid`

// healthTimeout bounds the query a collection runs: a scrape should not hang on a busy database.
const healthTimeout = 2 * time.Second

// observeDatabase registers the gauges of databaseHealth.
func observeDatabase(meter metric.Meter, pool *pgxpool.Pool) error {
	live, err := meter.Int64ObservableGauge("ferry.db.table.live_tuples",
		metric.WithDescription("Live row versions of a message table (all its partitions), as PostgreSQL's statistics estimate them."),
		metric.WithUnit("{tuple}"))
	if err != nil {
		return err
	}
	dead, err := meter.Int64ObservableGauge("ferry.db.table.dead_tuples",
		metric.WithDescription("Dead row versions of a message table (all its partitions) that vacuum has not removed yet: leases walk them."),
		metric.WithUnit("{tuple}"))
	if err != nil {
		return err
	}
	oldest, err := meter.Float64ObservableGauge("ferry.db.oldest_transaction.age",
		metric.WithDescription("Age of the oldest open transaction of a client of ferry's database (0 when none): vacuum removes no row version newer than it."),
		metric.WithUnit("s"))
	if err != nil {
		return err
	}
	messages := metric.WithAttributeSet(attribute.NewSet(attribute.String("db.collection.name", "messages")))
	bodies := metric.WithAttributeSet(attribute.NewSet(attribute.String("db.collection.name", "message_bodies")))
	_, err = meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, healthTimeout)
		defer cancel()
		var liveMessages, deadMessages, liveBodies, deadBodies int64
		var age float64
		if err := pool.QueryRow(ctx, databaseHealth).Scan(&liveMessages, &deadMessages, &liveBodies, &deadBodies, &age); err != nil {
			return nil // the database is away: the pool's gauges and the statements' errors say so; these stay unset
		}
		o.ObserveInt64(live, liveMessages, messages)
		o.ObserveInt64(dead, deadMessages, messages)
		o.ObserveInt64(live, liveBodies, bodies)
		o.ObserveInt64(dead, deadBodies, bodies)
		o.ObserveFloat64(oldest, age)
		return nil
	}, live, dead, oldest)
	return err
}
