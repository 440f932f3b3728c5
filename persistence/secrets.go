package persistence

import (
	"context"
	"crypto/rand"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Secrets is the repository of server_secrets: keys that every node must share (receipt signing).
type Secrets struct{ pool *pgxpool.Pool }

const secretGetOrCreate = `WITH ins AS (
		INSERT INTO server_secrets (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING secret)
	SELECT secret FROM ins UNION ALL SELECT secret FROM server_secrets WHERE name = $1 LIMIT 1`

// GetOrCreate returns the named 32-byte secret, creating it on first use (the first node to ask wins).
func (r *Secrets) GetOrCreate(ctx context.Context, name string) ([]byte, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	var secret []byte
	err := r.pool.QueryRow(ctx, secretGetOrCreate, name, fresh).Scan(&secret)
	return secret, interpretError("reading server secret", err)
}
