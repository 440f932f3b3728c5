package persistence

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

// A textArray reaches PostgreSQL as the text[] pgx would have sent for the same strings: empty, multi-byte,
// large and many elements, in order; and a connection without the codec refuses it instead of sending bytes.
func TestTextArrayParameter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := testdb.New(t)
	pool := connectTest(t, url)

	cases := [][]string{
		{""},
		{"a", "", "ünïcødé ✓", strings.Repeat("x", 300_000)},
		strings.Split(strings.Repeat("m,", 199)+"m", ","),
	}
	for _, elems := range cases {
		a := newTextArray(elems)
		var got []string
		require.NoError(t, pool.QueryRow(ctx, `SELECT $1::text[]`, a).Scan(&got))
		releaseTextArray(a)
		require.Equal(t, elems, got)
		var viaPgx []string // pgx's own encoding of the same strings still works beside it
		require.NoError(t, pool.QueryRow(ctx, `SELECT $1::text[]`, elems).Scan(&viaPgx))
		require.Equal(t, elems, viaPgx)
	}

	plain, err := pgx.Connect(ctx, url) // no registerTextArray
	require.NoError(t, err)
	defer plain.Close(ctx)
	var got []string
	require.Error(t, plain.QueryRow(ctx, `SELECT $1::text[]`, newTextArray([]string{"a"})).Scan(&got))
}

// BenchmarkInsertPlain stores batches of 20 × 1 KiB messages through insertPlain (one statement per batch) and
// reports the bytes ferry allocates per batch: pgx's own text[] encoding regrows its parameter buffer from 256
// bytes by doubling for every statement.
//
//	go test -run '^$' -bench InsertPlain -benchmem ./persistence/
func BenchmarkInsertPlain(b *testing.B) {
	ctx := context.Background()
	r := NewMessages(connectTest(b, testdb.New(b)), false)
	content := strings.Repeat("x", 1024)
	batch := make([]NewMessage, 20)
	for i := range batch {
		batch[i] = NewMessage{SizeBytes: 1024, Content: content, Groups: []int32{0}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := r.insertPlain(ctx, putKey{queueNo: 7, retentionSeconds: 3600}, [][]NewMessage{batch}); err != nil {
			b.Fatal(err)
		}
	}
}
