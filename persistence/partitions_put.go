package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// partitionsAppend appends a batch to a partitioned queue's partitions (docs/partitions.md). Each partition's
// counter row is taken in partition order (no deadlock between batches that share partitions) and held until
// commit, so offsets are dense and committed in offset order. A message that also went to MESSAGE groups keeps
// the id its rows got ($1, NULL = a new one). Returns each message's ordinal (1-based), id, partition and offset.
const partitionsAppend = `-- partitions.append
	WITH input AS (
		SELECT coalesce(u.id, nextval('messages_id_seq')) AS id, u.partition, u.channel_id, u.size_bytes, u.content,
			u.attributes, u.metadata, u.ord
		FROM unnest($1::bigint[], $2::int[], $3::text[], $4::int[], $5::text[], $6::json[], $7::json[])
			WITH ORDINALITY AS u(id, partition, channel_id, size_bytes, content, attributes, metadata, ord)
		ORDER BY u.ord
	), counts AS (
		SELECT partition, count(*) AS n FROM input GROUP BY partition
	), claimed AS (
		INSERT INTO queue_partitions AS p (queue_no, partition, next_offset)
		SELECT $8, partition, n FROM counts ORDER BY partition
		ON CONFLICT (queue_no, partition) DO UPDATE SET next_offset = p.next_offset + excluded.next_offset
		RETURNING p.partition, p.next_offset
	), numbered AS (
		SELECT i.*, c.next_offset - k.n + row_number() OVER (PARTITION BY i.partition ORDER BY i.ord) - 1 AS log_offset
		FROM input i JOIN claimed c USING (partition) JOIN counts k USING (partition)
	), ins AS (
		INSERT INTO partition_messages (queue_no, partition, log_offset, id, channel_id, size_bytes, expire_at, content,
			attributes, metadata)
		SELECT $8, partition, log_offset, id, channel_id, size_bytes, now() + make_interval(secs => $9), content,
			attributes, metadata
		FROM numbered
	)
	SELECT ord, id, partition, log_offset, now() + make_interval(secs => $9) FROM numbered`

// PartitionedMessage is a message of a partitioned queue: its partition, and the MESSAGE groups that also get a
// copy (Groups, possibly none).
type PartitionedMessage struct {
	NewMessage
	Partition int32
}

// PartitionedResult is where a message of a partitioned queue was stored.
type PartitionedResult struct {
	PutResult
	Partition int32
	Offset    int64
}

// PutPartitioned stores a batch of a partitioned queue in one transaction: the copies of the MESSAGE groups
// (as Put stores them: ordered groups, bodies stored once), then the partitions' log with the same ids. A batch
// that no MESSAGE group takes is one statement.
func (r *Messages) PutPartitioned(ctx context.Context, queueID string, retentionSeconds int32, msgs []PartitionedMessage) ([]PartitionedResult, error) {
	no, err := r.nums.of(ctx, queueID)
	if err != nil {
		return nil, err
	}
	n := len(msgs)
	out := make([]PartitionedResult, n)
	var copied []NewMessage
	var copiedIdx []int
	for i, m := range msgs {
		if len(m.Groups) > 0 {
			copied, copiedIdx = append(copied, m.NewMessage), append(copiedIdx, i)
		}
	}
	ids := make([]*int64, n)
	partitions, channels, sizes := make([]int32, n), make([]string, n), make([]int32, n)
	contents, attrs, metas := make([]string, n), make([]*string, n), make([]*string, n)
	for i, m := range msgs {
		partitions[i], channels[i], sizes[i], contents[i] = m.Partition, m.ChannelID, m.SizeBytes, m.Content
		attrs[i], metas[i] = jsonText(m.Attributes), jsonText(m.Metadata)
	}
	appendLog := func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, partitionsAppend, ids, partitions, channels, sizes, contents, attrs, metas, no, retentionSeconds)
		if err != nil {
			return err
		}
		var ord, id, offset int64
		var partition int32
		var expire time.Time
		seen := 0
		_, err = pgx.ForEachRow(rows, []any{&ord, &id, &partition, &offset, &expire}, func() error {
			k := int(ord - 1)
			if k < 0 || k >= n {
				return fmt.Errorf("append returned ordinality %d for a batch of %d", ord, n)
			}
			seen++
			out[k].ID, out[k].Partition, out[k].Offset = id, partition, offset
			if out[k].ExpireAt.IsZero() {
				out[k].ExpireAt = expire.UTC()
			}
			out[k].Groups = len(msgs[k].Groups)
			return nil
		})
		if err == nil && seen != n {
			err = fmt.Errorf("append stored %d messages of a batch of %d", seen, n)
		}
		return err
	}
	err = InTx(ctx, r.pool, func(tx pgx.Tx) error {
		if len(copied) > 0 {
			results := make([]PutResult, len(copied))
			batch := &pgx.Batch{}
			release := r.queueInsert(batch, queueID, no, retentionSeconds, copied, results, nil)
			err := tx.SendBatch(ctx, batch).Close()
			release()
			if err != nil {
				return err
			}
			for k, i := range copiedIdx {
				id := results[k].ID
				ids[i] = &id
				out[i].ExpireAt = results[k].ExpireAt
			}
		}
		return appendLog(ctx, tx)
	})
	return out, interpretError("putting messages", err)
}
