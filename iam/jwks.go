package iam

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"sync"
	"time"
)

// jwksRefresh bounds how stale the cached key set may get; an unknown kid refreshes sooner (at most every
// jwksMinRefresh) so that key rotation works without a restart.
const (
	jwksRefresh    = 10 * time.Minute
	jwksMinRefresh = 10 * time.Second
)

type jwksCache struct {
	url    string
	client *http.Client

	mu      sync.Mutex
	keys    map[string]any // kid → *rsa.PublicKey | *ecdsa.PublicKey
	fetched time.Time
}

func newJWKSCache(url string) *jwksCache {
	return &jwksCache{url: url, client: &http.Client{Timeout: 5 * time.Second}}
}

func (c *jwksCache) key(ctx context.Context, kid, alg string) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stale := time.Since(c.fetched) > jwksRefresh
	if _, ok := c.lookup(kid); stale || (!ok && time.Since(c.fetched) > jwksMinRefresh) {
		if err := c.fetch(ctx); err != nil && c.keys == nil {
			return nil, err
		}
	}
	key, ok := c.lookup(kid)
	if !ok {
		return nil, fmt.Errorf("no key %q in the JWKS", kid)
	}
	switch key.(type) {
	case *rsa.PublicKey:
		if alg != "RS256" {
			return nil, errors.New("key type does not match the algorithm")
		}
	case *ecdsa.PublicKey:
		if alg != "ES256" {
			return nil, errors.New("key type does not match the algorithm")
		}
	}
	return key, nil
}

func (c *jwksCache) lookup(kid string) (any, bool) {
	if kid == "" && len(c.keys) == 1 {
		for _, k := range c.keys {
			return k, true
		}
	}
	k, ok := c.keys[kid]
	return k, ok
}

func (c *jwksCache) fetch(ctx context.Context) error {
	c.fetched = time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetching JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching JWKS: status %d", resp.StatusCode)
	}
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&set); err != nil {
		return fmt.Errorf("decoding JWKS: %w", err)
	}
	keys := map[string]any{}
	for _, k := range set.Keys {
		switch k.Kty {
		case "RSA":
			n, err1 := base64.RawURLEncoding.DecodeString(k.N)
			e, err2 := base64.RawURLEncoding.DecodeString(k.E)
			if err1 != nil || err2 != nil {
				continue
			}
			keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		case "EC":
			if k.Crv != "P-256" {
				continue
			}
			x, err1 := base64.RawURLEncoding.DecodeString(k.X)
			y, err2 := base64.RawURLEncoding.DecodeString(k.Y)
			if err1 != nil || err2 != nil {
				continue
			}
			keys[k.Kid] = &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		}
	}
	c.keys = keys
	return nil
}
