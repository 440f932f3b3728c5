package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The raw-SQL peer of ferry's data plane, with ferry's durability: every commit waits for its WAL before it
// answers — unless the benchmark runs with FERRY_DB_ASYNC_COMMIT=true, where ferry's and raw SQL's leases and
// deletes both commit without waiting — so the two are compared on equal terms.
const (
	rawLease = `WITH next AS (
			SELECT id FROM %s WHERE visible_at <= now() ORDER BY visible_at, id LIMIT 32 FOR UPDATE SKIP LOCKED)
		UPDATE %s r SET visible_at = now() + interval '120 seconds' FROM next WHERE r.id = next.id
		RETURNING r.id, r.payload`
	rawAsync = `SELECT set_config('synchronous_commit', 'off', true)`
	// rawTable is the raw cycle's table, with ferry's table settings (migrations/0002).
	rawTable = `CREATE TABLE IF NOT EXISTS bench_raw (id bigserial PRIMARY KEY,
			visible_at timestamptz NOT NULL DEFAULT now(), payload text NOT NULL) WITH (fillfactor = 80,
			autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0, vacuum_truncate = false);
		CREATE INDEX IF NOT EXISTS bench_raw_lease ON bench_raw (visible_at, id)`
	// rawInsert stores a batch of payloads ($1) in one statement, as PutMessages stores a batch.
	rawInsert = `INSERT INTO bench_raw (payload) SELECT unnest($1::text[])`
)

// rawAsyncCommit: FERRY_DB_ASYNC_COMMIT=true, as ferry's nodes see it.
var rawAsyncCommit = os.Getenv("FERRY_DB_ASYNC_COMMIT") == "true"

// rawLeaseBatch leases up to 32 rows of table and returns their ids and payloads, with ferry's durability.
func rawLeaseBatch(ctx context.Context, pool *pgxpool.Pool, table string) (ids []int64, payloads []string, err error) {
	batch := &pgx.Batch{}
	if rawAsyncCommit {
		batch.Queue(rawAsync)
	}
	batch.Queue(fmt.Sprintf(rawLease, table, table)).Query(func(rows pgx.Rows) error {
		var id int64
		var p string
		_, err := pgx.ForEachRow(rows, []any{&id, &p}, func() error {
			ids, payloads = append(ids, id), append(payloads, p)
			return nil
		})
		return err
	})
	err = pool.SendBatch(ctx, batch).Close()
	return ids, payloads, err
}

// rawDelete deletes ids from table, with ferry's durability.
func rawDelete(ctx context.Context, pool *pgxpool.Pool, table string, ids []int64) error {
	batch := &pgx.Batch{}
	if rawAsyncCommit {
		batch.Queue(rawAsync)
	}
	batch.Queue(`DELETE FROM `+table+` WHERE id = ANY($1)`, ids)
	return pool.SendBatch(ctx, batch).Close()
}

// sqlLatency is latency as raw SQL on the same database: single-row INSERTs at rate/s for d, each committed
// (WAL on disk) and then waking one of `consumers` goroutines in-process, which leases up to 32 with SKIP LOCKED
// and deletes them; a consumer that leased something wakes the next, and an idle one looks again after 1 s. It
// returns the p50 and p99 put→receive latency (ms): the floor any Postgres-backed queue on this machine starts
// from. The wake-up is in-process, not a NOTIFY in the insert: PostgreSQL serialises the commits of notifying
// transactions on one lock, which made that floor's p99 2–5× ferry's.
func (n *node) sqlLatency(b testing.TB, rate int, d time.Duration) (p50, p99 float64) {
	ctx := context.Background()
	const table = "bench_raw_latency"
	if _, err := n.pool.Exec(ctx, `DROP TABLE IF EXISTS `+table+`;
		CREATE TABLE `+table+` (id bigserial PRIMARY KEY, visible_at timestamptz NOT NULL DEFAULT now(), payload text NOT NULL);
		CREATE INDEX ON `+table+` (visible_at, id)`); err != nil {
		b.Fatal(err)
	}
	defer func() { _, _ = n.pool.Exec(ctx, `DROP TABLE IF EXISTS `+table) }()
	ctx, cancel := context.WithTimeout(ctx, d+3*time.Second)
	defer cancel()

	// A buffered wake-up per consumer: each commit wakes one waiting consumer, at most `consumers` pending.
	wake := make(chan struct{}, consumers)
	wakeOne := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lat []float64
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ids, payloads, err := rawLeaseBatch(ctx, n.pool, table)
				if err != nil {
					continue
				}
				if len(ids) == 0 {
					select {
					case <-wake:
					case <-time.After(time.Second):
					case <-ctx.Done():
					}
					continue
				}
				wakeOne() // there may be more
				now := time.Now().UnixNano()
				mu.Lock()
				for _, p := range payloads {
					if sent, err := strconv.ParseInt(p, 10, 64); err == nil {
						lat = append(lat, float64(now-sent)/1e6)
					}
				}
				mu.Unlock()
				_ = rawDelete(context.WithoutCancel(ctx), n.pool, table, ids)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	atRate(ctx, rate, d, func(ctx context.Context, sent int64) {
		if _, err := n.pool.Exec(ctx, `INSERT INTO `+table+` (payload) VALUES ($1)`, strconv.FormatInt(sent, 10)); err == nil {
			wakeOne()
		}
	})
	time.Sleep(time.Second)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return percentiles(b, lat)
}
