package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/internal/startstop"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/metering"
)

// Maintainer defaults.
const (
	MaintainIntervalDefault = 10 * time.Second
	MaintainBatchDefault    = 1000
	MaintainPauseDefault    = 20 * time.Millisecond
)

// maintainerLockKey is the advisory lock that makes one node at a time the maintainer.
const maintainerLockKey int64 = 0x6665727279_01 // "ferry" + 1

// Maintainer runs the periodic upkeep: it records id watermarks, deletes messages past their queue's retention
// (counted in the queue's metrics) and messages left in deleted queues by puts that raced the delete, expires
// deduplication keys, retry tokens and the registrations of consumers that stopped calling, samples the queues'
// metric gauges once a minute and deletes metric rollups past their retention. Work goes in
// batches with pauses. A session-level advisory lock makes one node the maintainer at a time; the others skip the
// cycle, and since every step is an idempotent batched delete, two maintainers at once would still be safe.
type Maintainer struct {
	Pool     *pgxpool.Pool
	Store    *persistence.Store
	Messages *persistence.Messages
	Metering *metering.Meter
	Logger   *slog.Logger
	Interval time.Duration // default MaintainIntervalDefault
	Batch    int           // default MaintainBatchDefault
	Pause    time.Duration // between batches; default MaintainPauseDefault

	loop startstop.Base
}

// Start runs a cycle every Interval until Stop. Safe to call twice.
func (m *Maintainer) Start(ctx context.Context) { m.loop.Start(ctx, m.run) }

// Stop ends the loop. Safe to call twice.
func (m *Maintainer) Stop() { m.loop.Stop() }

func (m *Maintainer) run(ctx context.Context) {
	ticker := time.NewTicker(m.interval())
	defer ticker.Stop()
	for {
		if _, err := m.RunOnce(ctx); err != nil && ctx.Err() == nil {
			m.logger().Warn("maintenance cycle failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// RunOnce runs one cycle if this node wins the maintainer lock, and reports whether it did.
func (m *Maintainer) RunOnce(ctx context.Context) (bool, error) {
	conn, err := m.Pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, maintainerLockKey).Scan(&locked); err != nil {
		return false, err
	}
	if !locked {
		return false, nil
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, maintainerLockKey)
	}()

	if err := m.Messages.RecordWatermark(ctx); err != nil {
		return true, err
	}
	if err := m.expireMessages(ctx); err != nil {
		return true, err
	}
	if err := m.drain(ctx, func() (int64, error) { return m.Messages.DeleteOrphans(ctx, m.batch()) }); err != nil {
		return true, err
	}
	if err := m.drain(ctx, func() (int64, error) { return m.Messages.ReviveExpiredRanges(ctx, m.batch()) }); err != nil {
		return true, err
	}
	if err := m.drain(ctx, func() (int64, error) { return m.Messages.DeleteEmptyRanges(ctx, m.batch()) }); err != nil {
		return true, err
	}
	if err := m.drain(ctx, func() (int64, error) { return m.Messages.ExpireBodies(ctx, m.batch()) }); err != nil {
		return true, err
	}
	if err := m.drain(ctx, func() (int64, error) { return m.Messages.ExpireDedupKeys(ctx, m.batch()) }); err != nil {
		return true, err
	}
	if err := m.purgeDeletedGroups(ctx); err != nil {
		return true, err
	}
	// Partitioned queues keep their messages until retention ends, whatever their groups committed.
	if err := m.drain(ctx, func() (int64, error) { return m.Store.Partitions.Expire(ctx, m.batch()) }); err != nil {
		return true, err
	}
	if err := m.drain(ctx, func() (int64, error) { return m.Store.Consumers.Sweep(ctx, m.batch()) }); err != nil {
		return true, err
	}
	if err := m.drain(ctx, func() (int64, error) { return m.Store.Idempotency.Expire(ctx, m.batch()) }); err != nil {
		return true, err
	}
	if err := m.Metering.SampleDue(ctx); err != nil {
		return true, err
	}
	return true, m.drain(ctx, func() (int64, error) { return m.Metering.ExpireBatch(ctx, m.batch()) })
}

func (m *Maintainer) expireMessages(ctx context.Context) error {
	after := ""
	for {
		queues, err := m.Store.Queues.AllWithRetention(ctx, after, 500)
		if err != nil {
			return err
		}
		for _, q := range queues {
			cutoff, err := m.Messages.ExpiryCutoff(ctx, q.RetentionSeconds)
			if err != nil {
				return err
			}
			if cutoff == 0 {
				continue
			}
			var expired int64
			err = m.drain(ctx, func() (int64, error) {
				n, err := m.Messages.ExpireBatch(ctx, q.ID, cutoff, m.batch())
				expired += n
				return n, err
			})
			m.Metering.Count(q.TenancyID, q.ID, persistence.WholeQueue, metering.Expired, expired)
			if err != nil {
				return err
			}
		}
		if len(queues) < 500 {
			return nil
		}
		after = queues[len(queues)-1].ID
	}
}

// purgeDeletedGroups removes the stored messages of deleted consumer groups.
func (m *Maintainer) purgeDeletedGroups(ctx context.Context) error {
	refs, err := m.Store.ConsumerGroups.DeletedWithMessages(ctx)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if err := m.drain(ctx, func() (int64, error) { return m.Store.ConsumerGroups.PurgeBatch(ctx, ref, m.batch()) }); err != nil {
			return err
		}
	}
	return nil
}

// drain repeats a batched delete until a batch comes back short, pausing between batches.
func (m *Maintainer) drain(ctx context.Context, batch func() (int64, error)) error {
	for {
		n, err := batch()
		if err != nil || n < int64(m.batch()) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(m.pause()):
		}
	}
}

func (m *Maintainer) interval() time.Duration {
	if m.Interval > 0 {
		return m.Interval
	}
	return MaintainIntervalDefault
}

func (m *Maintainer) batch() int {
	if m.Batch > 0 {
		return m.Batch
	}
	return MaintainBatchDefault
}

func (m *Maintainer) pause() time.Duration {
	if m.Pause > 0 {
		return m.Pause
	}
	return MaintainPauseDefault
}

func (m *Maintainer) logger() *slog.Logger {
	if m.Logger == nil {
		return slog.Default()
	}
	return m.Logger
}
