package persistence

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/fault"
)

// The quotas of a tenancy (table tenancy_quotas, migration 0013; docs/limits.md). The count quotas are enforced
// here, inside the transaction that creates the resource; the others by services/limits and the data plane.
const (
	QuotaQueues                 = "queues"
	QuotaConsumerGroupsPerQueue = "consumer-groups-per-queue"
	QuotaCompartments           = "compartments"
	QuotaPolicies               = "policies"
	QuotaLongPolls              = "long-polls"
	QuotaWatches                = "watches"
	QuotaStoredBytes            = "stored-bytes"
	QuotaRequestsPerSecond      = "requests-per-second"
	QuotaBytesPerSecond         = "bytes-per-second"
)

// The quotas' defaults, for a tenancy without an override and a node without FERRY_QUOTA_* settings
// (services/limits.Config). The data-plane rates follow OCI Queue's published per-queue limits (1,000 API calls/s,
// 10 MB/s in and out) scaled to a tenancy of several busy queues.
const (
	QueuesDefault                 = 1000
	ConsumerGroupsPerQueueDefault = 100
	CompartmentsDefault           = 1000
	PoliciesDefault               = 1000
	LongPollsDefault              = 1000
	WatchesDefault                = 2000
	StoredBytesDefault            = 1 << 40 // 1 TiB
	RequestsPerSecondDefault      = 5000
	BytesPerSecondDefault         = 50_000_000
)

// BuiltInQuotaDefaults returns the quotas' default values above, by name.
func BuiltInQuotaDefaults() map[string]int64 {
	return map[string]int64{QuotaQueues: QueuesDefault, QuotaConsumerGroupsPerQueue: ConsumerGroupsPerQueueDefault,
		QuotaCompartments: CompartmentsDefault, QuotaPolicies: PoliciesDefault, QuotaLongPolls: LongPollsDefault,
		QuotaWatches: WatchesDefault, QuotaStoredBytes: StoredBytesDefault, QuotaRequestsPerSecond: RequestsPerSecondDefault,
		QuotaBytesPerSecond: BytesPerSecondDefault}
}

// QuotaNames lists every quota, in the order `ferry quota list` prints them.
var QuotaNames = []string{QuotaQueues, QuotaConsumerGroupsPerQueue, QuotaCompartments, QuotaPolicies, QuotaLongPolls,
	QuotaWatches, QuotaStoredBytes, QuotaRequestsPerSecond, QuotaBytesPerSecond}

// IsQuota reports whether name is a quota's name.
func IsQuota(name string) bool { return slices.Contains(QuotaNames, name) }

// Quotas is the repository of the tenancies' quota overrides, with the defaults of the nodes' configuration.
type Quotas struct {
	pool     *pgxpool.Pool
	defaults atomic.Pointer[map[string]int64]
}

// SetDefaults sets the value of the quotas a tenancy has no override of (services/limits.Config); a quota
// missing from defaults keeps its built-in default.
func (r *Quotas) SetDefaults(defaults map[string]int64) {
	d := BuiltInQuotaDefaults()
	for k, v := range defaults {
		d[k] = v
	}
	r.defaults.Store(&d)
}

// Default is the value of a quota without an override.
func (r *Quotas) Default(name string) int64 {
	if r != nil {
		if d := r.defaults.Load(); d != nil {
			return (*d)[name]
		}
	}
	return BuiltInQuotaDefaults()[name]
}

// Set records a tenancy's value of a quota. The tenancy must exist.
func (r *Quotas) Set(ctx context.Context, tenancyID, name string, value int64) error {
	if !IsQuota(name) {
		return fault.InvalidParameter("name: %q is not a quota (one of %v)", name, QuotaNames)
	}
	if value < 0 {
		return fault.InvalidParameter("value: must be 0 or more")
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := r.pool.Exec(ctx, `INSERT INTO tenancy_quotas (tenancy_id, name, value) VALUES ($1, $2, $3)
		ON CONFLICT (tenancy_id, name) DO UPDATE SET value = excluded.value, time_updated = now()`, tenancyID, name, value)
	return fault.NotFoundIn("tenancy", interpretError("setting quota", err))
}

// Reset removes a tenancy's override of a quota: the default applies again.
func (r *Quotas) Reset(ctx context.Context, tenancyID, name string) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := r.pool.Exec(ctx, `DELETE FROM tenancy_quotas WHERE tenancy_id = $1 AND name = $2`, tenancyID, name)
	return interpretError("resetting quota", err)
}

// Overrides returns every tenancy's overrides (tenancy → name → value): the nodes' cache of the rate and
// concurrency quotas reloads them every few seconds. The table holds a row per override only, so it stays small.
func (r *Quotas) Overrides(ctx context.Context) (map[string]map[string]int64, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	rows, err := r.pool.Query(ctx, `SELECT tenancy_id, name, value FROM tenancy_quotas`)
	if err != nil {
		return nil, interpretError("reading quotas", err)
	}
	out := map[string]map[string]int64{}
	var tenancyID, name string
	var value int64
	_, err = pgx.ForEachRow(rows, []any{&tenancyID, &name, &value}, func() error {
		if out[tenancyID] == nil {
			out[tenancyID] = map[string]int64{}
		}
		out[tenancyID][name] = value
		return nil
	})
	return out, interpretError("reading quotas", err)
}

// QuotaUsage is one quota of a tenancy: its value and, where the database knows it, what is used of it.
type QuotaUsage struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
	// Used is nil for the rates and long-polls (per node, in memory). For consumer-groups-per-queue it is the
	// largest count of any queue.
	Used *int64 `json:"used"`
}

// quotaUsed counts what a tenancy uses of each quota the database can count: the count quotas as checkCount
// counts them ($1 the tenancy), then the watches ($2 their liveness) and the stored bytes.
const quotaUsed = `SELECT (` + countQueues + `),
	(SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM consumer_groups
		WHERE tenancy_id = $1 AND lifecycle_state <> 'DELETED' GROUP BY queue_id) g),
	(` + countCompartments + `),
	(` + countPolicies + `),
	(SELECT count(*) FROM consumers WHERE tenancy_id = $1 AND kind = 'watch' AND left_at IS NULL
		AND last_seen >= now() - make_interval(secs => $2)),
	(SELECT coalesce(sum(m.size_bytes), 0)::bigint FROM queues q JOIN messages m ON m.queue_no = q.no
		WHERE q.tenancy_id = $1)`

// List returns a tenancy's quotas with their values (override or default) and use. watchLiveSeconds is how
// recent a watch's heartbeat must be for it to count.
func (r *Quotas) List(ctx context.Context, tenancyID string, watchLiveSeconds int32) ([]QuotaUsage, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var exists bool
	if err := r.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tenancies WHERE id = $1)`, tenancyID).Scan(&exists); err != nil {
		return nil, interpretError("listing quotas", err)
	}
	if !exists {
		return nil, fault.NotFound("tenancy %s does not exist", tenancyID)
	}
	overrides := map[string]int64{}
	rows, err := r.pool.Query(ctx, `SELECT name, value FROM tenancy_quotas WHERE tenancy_id = $1`, tenancyID)
	if err != nil {
		return nil, interpretError("listing quotas", err)
	}
	var name string
	var value int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &value}, func() error { overrides[name] = value; return nil }); err != nil {
		return nil, interpretError("listing quotas", err)
	}
	var used [6]int64
	if err := r.pool.QueryRow(ctx, quotaUsed, tenancyID, watchLiveSeconds).Scan(&used[0], &used[1], &used[2], &used[3],
		&used[4], &used[5]); err != nil {
		return nil, interpretError("counting quota use", err)
	}
	usedOf := map[string]*int64{QuotaQueues: &used[0], QuotaConsumerGroupsPerQueue: &used[1], QuotaCompartments: &used[2],
		QuotaPolicies: &used[3], QuotaWatches: &used[4], QuotaStoredBytes: &used[5]}
	out := make([]QuotaUsage, len(QuotaNames))
	for i, name := range QuotaNames {
		v, ok := overrides[name]
		if !ok {
			v = r.Default(name)
		}
		out[i] = QuotaUsage{Name: name, Value: v, Used: usedOf[name]}
	}
	return out, nil
}

// Counts of a tenancy's resources, as the count quotas count them (deleted resources do not count; the root
// compartment does not count as one of the tenancy's compartments).
const (
	countQueues       = `SELECT count(*) FROM queues WHERE tenancy_id = $1 AND lifecycle_state <> 'DELETED'`
	countCompartments = `SELECT count(*) FROM compartments WHERE tenancy_id = $1 AND parent_id IS NOT NULL
		AND lifecycle_state <> 'DELETED'`
	countPolicies = `SELECT count(*) FROM policies WHERE tenancy_id = $1 AND lifecycle_state <> 'DELETED'`
	countGroups   = `SELECT count(*) FROM consumer_groups WHERE tenancy_id = $1 AND queue_id = $2 AND lifecycle_state <> 'DELETED'`
)

// checkCount refuses, with LimitExceeded, a creation that would take the tenancy past a count quota. It runs in
// the creating transaction and first takes a transaction lock on (tenancy, quota): concurrent creations of the
// same kind queue behind it, and each counts after the previous one committed (read committed: every statement
// sees what committed before it started), so no race lets a tenancy exceed its quota. adding is how many the
// creation adds; countSQL's parameters are the tenancy id and args.
func (r *Quotas) checkCount(ctx context.Context, tx pgx.Tx, tenancyID, name string, adding int64, countSQL string, args ...any) error {
	if r == nil { // a repository built without the store (a test of another table)
		return nil
	}
	var limit int64
	err := tx.QueryRow(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('ferry.quota:' || $1 || ':' || $2, 0)),
		coalesce((SELECT value FROM tenancy_quotas WHERE tenancy_id = $1 AND name = $2), $3)`,
		tenancyID, name, r.Default(name)).Scan(nil, &limit)
	if err != nil {
		return err
	}
	var n int64
	if err := tx.QueryRow(ctx, countSQL, append([]any{tenancyID}, args...)...).Scan(&n); err != nil {
		return err
	}
	if n+adding > limit {
		return fault.LimitExceeded("the tenancy's %s quota is %d and %d are in use: delete some or ask the operator to raise it (quota %q)",
			name, limit, n, name)
	}
	return nil
}

// Nodes is the registry of live ferry nodes (table ferry_nodes): the rate limits are shared among them.
type Nodes struct{ pool *pgxpool.Pool }

// Beat records that node is alive, forgets nodes silent for an hour, and returns how many nodes were seen within
// live (this one included).
func (r *Nodes) Beat(ctx context.Context, node string, live time.Duration) (int, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO ferry_nodes (id, last_seen) VALUES ($1, now()) ON CONFLICT (id) DO UPDATE SET last_seen = now()`, node)
	batch.Queue(`DELETE FROM ferry_nodes WHERE last_seen < now() - interval '1 hour'`)
	var n int
	batch.Queue(`SELECT count(*) FROM ferry_nodes WHERE last_seen >= now() - make_interval(secs => $1)`, live.Seconds()).
		QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
	err := r.pool.SendBatch(ctx, batch).Close()
	return max(n, 1), interpretError("node heartbeat", err)
}

// Leave removes node from the registry (a node that stops): the others take its share at their next refresh.
func (r *Nodes) Leave(ctx context.Context, node string) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := r.pool.Exec(ctx, `DELETE FROM ferry_nodes WHERE id = $1`, node)
	return interpretError("node leaving", err)
}
