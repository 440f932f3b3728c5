package persistence

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

// BenchmarkLease leases 10 messages per call through lease (one statement per call, as without coalescing), from a
// queue filled beforehand with enough messages for every call, so that each call leases a full batch: from one
// channel and from two (interleaved), both with a dead-letter limit (the statements that also unblock ordered
// groups). It measures the statement and ferry's own allocations per call around it.
//
//	go test -run '^$' -bench Lease -benchmem ./persistence/
func BenchmarkLease(b *testing.B) {
	pool := connectTest(b, testdb.New(b))
	var queues atomic.Int64
	for _, bc := range []struct {
		name     string
		channels []string
	}{
		{"one_channel", []string{"a"}},
		{"two_channels", []string{"a", "b"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			r := NewMessages(pool, false)
			const limit = 10
			no := 1000 + queues.Add(1)
			batch := make([]NewMessage, 0, maxCoalescedMessages)
			for i := range b.N * limit {
				batch = append(batch, NewMessage{ChannelID: bc.channels[i%len(bc.channels)], SizeBytes: 16,
					Content: "0123456789abcdef", Groups: []int32{0}})
				if len(batch) == cap(batch) || i == b.N*limit-1 {
					if _, err := r.insertBatches(ctx, putKey{queueNo: no, retentionSeconds: 3600}, [][]NewMessage{batch}); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			if _, err := pool.Exec(ctx, `ANALYZE messages`); err != nil {
				b.Fatal(err)
			}
			req := LeaseRequest{Channels: bc.channels, Limit: limit, VisibilitySeconds: 60, MaxDeliveries: 5}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				req.LeaseID = int64(i + 1)
				got, _, err := r.lease(ctx, no, req, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != limit {
					b.Fatalf("leased %d messages, want %d", len(got), limit)
				}
			}
		})
	}
}

// BenchmarkInsertPlain stores batches of 20 × 1 KiB messages through insertBatches (one statement per batch) and
// reports the bytes ferry allocates per batch: pgx's own text[] encoding regrows its parameter buffer from 256
// bytes by doubling for every statement.
//
//	go test -run '^$' -bench InsertPlain -benchmem ./persistence/
func BenchmarkInsertPlain(b *testing.B) {
	b.ReportAllocs()
	benchmarkInsert(b, "", []int32{0})
}

// BenchmarkInsertFanout stores batches of 20 × 1 KiB messages, each for 100 consumer groups (its content once in
// message_bodies, a row per group): the statement behind BenchmarkPublishFanout's 100-group publish, without HTTP.
//
//	go test -run '^$' -bench InsertFanout -count 5 ./persistence/
func BenchmarkInsertFanout(b *testing.B) {
	groups := make([]int32, 100)
	for g := range groups {
		groups[g] = int32(g)
	}
	benchmarkInsert(b, "ch", groups)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*20*len(groups)), "µs/row")
}

// benchmarkInsert stores b.N batches of 20 × 1 KiB messages of channel for groups through insertBatches.
func benchmarkInsert(b *testing.B, channel string, groups []int32) {
	ctx := context.Background()
	r := NewMessages(connectTest(b, testdb.New(b)), false)
	content := strings.Repeat("x", 1024)
	batch := make([]NewMessage, 20)
	for i := range batch {
		batch[i] = NewMessage{ChannelID: channel, SizeBytes: 1024, Content: content, Groups: groups}
	}
	b.ResetTimer()
	for range b.N {
		if _, err := r.insertBatches(ctx, putKey{queueNo: 7, retentionSeconds: 3600}, [][]NewMessage{batch}); err != nil {
			b.Fatal(err)
		}
	}
}
