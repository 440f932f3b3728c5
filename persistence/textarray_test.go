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
