package persistence

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

// messagePartition names the partition PostgreSQL routes a queue's rows to: for the first 3,000 queue numbers (a
// service's numbers come from a sequence) and the edges of the bigint range, as satisfies_hash_partition says, and
// as a row inserted through the partitioned table lands.
func TestMessagePartitionMatchesPostgres(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := connectTest(t, testdb.New(t))
	nos := []int64{0, -1, math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MaxInt64, math.MinInt64, 1 << 40, -(1 << 40) + 7}
	for no := int64(1); no <= 3000; no++ {
		nos = append(nos, no)
	}
	rows, err := pool.Query(ctx, `SELECT n, (SELECT k FROM generate_series(0, 7) k
		WHERE satisfies_hash_partition('messages'::regclass, 8, k, n)) FROM unnest($1::bigint[]) n`, nos)
	require.NoError(t, err)
	counts := make([]int, messagePartitions)
	for rows.Next() {
		var no int64
		var k int
		require.NoError(t, rows.Scan(&no, &k))
		require.Equal(t, k, messagePartition(no), "queue number %d", no)
		counts[k]++
	}
	require.NoError(t, rows.Err())
	for k, n := range counts {
		require.Greater(t, n, 250, "partition %d holds a fair share of 3,000 queues", k)
	}

	var table string
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO message_bodies (queue_no, id, content) VALUES (4242, 1, 'x')
		RETURNING tableoid::regclass::text`).Scan(&table))
	require.Equal(t, fmt.Sprintf("message_bodies_%d", messagePartition(4242)), table)
}
