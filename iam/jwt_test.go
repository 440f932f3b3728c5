package iam_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/iam"
)

const testTenancy = "ocid1.tenancy.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// keys are generated once per test binary: RSA key generation is slow under -race.
var (
	rsaKey, rsaOther = mustRSA(), mustRSA()
	ecKey, ecOther   = mustEC(), mustEC()
	hsSecret         = []byte(strings.Repeat("s", 32))
)

func mustRSA() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}

func mustEC() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

// claims returns valid claims; mutate them to build a bad token.
func claims() jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"sub":     "alice",
		"tenancy": testTenancy,
		"groups":  []string{"Producers"},
		"iat":     now.Unix(),
		"exp":     now.Add(time.Hour).Unix(),
	}
}

func sign(t *testing.T, method jwt.SigningMethod, key any, c jwt.MapClaims, kid string) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func writePEM(t *testing.T, blockType string, der []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key.pem")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600))
	return path
}

func pkixPEM(t *testing.T, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return writePEM(t, "PUBLIC KEY", der)
}

func newAuth(t *testing.T, cfg iam.AuthConfig) *iam.Authenticator {
	t.Helper()
	a, err := iam.NewAuthenticator(cfg)
	require.NoError(t, err)
	return a
}

func requireAccepted(t *testing.T, a *iam.Authenticator, token string) *iam.Principal {
	t.Helper()
	p, err := a.Authenticate(context.Background(), token)
	require.NoError(t, err)
	require.Equal(t, "alice", p.Subject)
	require.Equal(t, testTenancy, p.TenancyID)
	require.Equal(t, []string{"Producers"}, p.Groups)
	return p
}

func requireRejected(t *testing.T, a *iam.Authenticator, token, why string) {
	t.Helper()
	p, err := a.Authenticate(context.Background(), token)
	require.Error(t, err, why)
	require.Nil(t, p, why)
}

func TestRS256PublicKeyFile(t *testing.T) {
	t.Parallel()
	for name, path := range map[string]string{
		"PKIX":  pkixPEM(t, &rsaKey.PublicKey),
		"PKCS1": writePEM(t, "RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey)),
		"certificate": func() string {
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "issuer"},
				NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &rsaKey.PublicKey, rsaKey)
			require.NoError(t, err)
			return writePEM(t, "CERTIFICATE", der)
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			a := newAuth(t, iam.AuthConfig{PublicKeyFile: path})
			requireAccepted(t, a, sign(t, jwt.SigningMethodRS256, rsaKey, claims(), ""))
			requireRejected(t, a, sign(t, jwt.SigningMethodRS256, rsaOther, claims(), ""), "signed with another key")
			requireRejected(t, a, sign(t, jwt.SigningMethodES256, ecKey, claims(), ""), "ES256 is not allowed with an RSA key")
			requireRejected(t, a, sign(t, jwt.SigningMethodHS256, hsSecret, claims(), ""), "HS256 is not configured")
			requireRejected(t, a, sign(t, jwt.SigningMethodRS512, rsaKey, claims(), ""), "RS512 is not allowed")
		})
	}
}

func TestES256PublicKeyFile(t *testing.T) {
	t.Parallel()
	a := newAuth(t, iam.AuthConfig{PublicKeyFile: pkixPEM(t, &ecKey.PublicKey)})
	requireAccepted(t, a, sign(t, jwt.SigningMethodES256, ecKey, claims(), ""))
	requireRejected(t, a, sign(t, jwt.SigningMethodES256, ecOther, claims(), ""), "signed with another key")
	requireRejected(t, a, sign(t, jwt.SigningMethodRS256, rsaKey, claims(), ""), "RS256 is not allowed with an EC key")
	requireRejected(t, a, sign(t, jwt.SigningMethodES384, mustP384(t), claims(), ""), "ES384 is not allowed")
}

func mustP384(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	return k
}

func TestPublicKeyFileErrors(t *testing.T) {
	t.Parallel()
	_, err := iam.NewAuthenticator(iam.AuthConfig{PublicKeyFile: filepath.Join(t.TempDir(), "missing.pem")})
	require.Error(t, err)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a key"), 0o600))
	_, err = iam.NewAuthenticator(iam.AuthConfig{PublicKeyFile: garbage})
	require.Error(t, err)
	_, err = iam.NewAuthenticator(iam.AuthConfig{PublicKeyFile: writePEM(t, "PUBLIC KEY", []byte("junk"))})
	require.Error(t, err)
}

// jwksServer serves the public halves of keys as a JWKS and counts the fetches.
type jwksServer struct {
	*httptest.Server
	keys    atomic.Pointer[map[string]any] // kid → public key
	fetches atomic.Int64
	fail    atomic.Bool
}

func newJWKSServer(t *testing.T, keys map[string]any) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.keys.Store(&keys)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		if s.fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var set struct {
			Keys []map[string]string `json:"keys"`
		}
		for kid, k := range *s.keys.Load() {
			switch k := k.(type) {
			case *rsa.PublicKey:
				set.Keys = append(set.Keys, map[string]string{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
					"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())})
			case *ecdsa.PublicKey:
				set.Keys = append(set.Keys, map[string]string{"kty": "EC", "kid": kid, "crv": "P-256",
					"x": b64(k.X.FillBytes(make([]byte, 32))), "y": b64(k.Y.FillBytes(make([]byte, 32)))})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(s.Close)
	return s
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func TestJWKS(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, map[string]any{"rsa-1": &rsaKey.PublicKey, "ec-1": &ecKey.PublicKey})
	a := newAuth(t, iam.AuthConfig{JWKSURL: srv.URL})

	requireAccepted(t, a, sign(t, jwt.SigningMethodRS256, rsaKey, claims(), "rsa-1"))
	requireAccepted(t, a, sign(t, jwt.SigningMethodES256, ecKey, claims(), "ec-1"))
	require.Equal(t, int64(1), srv.fetches.Load(), "the key set is cached")

	requireRejected(t, a, sign(t, jwt.SigningMethodRS256, rsaOther, claims(), "rsa-1"), "signed with another key")
	requireRejected(t, a, sign(t, jwt.SigningMethodES256, ecOther, claims(), "ec-1"), "signed with another key")
	requireRejected(t, a, sign(t, jwt.SigningMethodRS256, rsaKey, claims(), "unknown"), "unknown kid")
	requireRejected(t, a, sign(t, jwt.SigningMethodES256, ecKey, claims(), "rsa-1"), "kid of a key of another type")
	requireRejected(t, a, sign(t, jwt.SigningMethodRS256, rsaKey, claims(), ""), "no kid with several keys")
	requireRejected(t, a, sign(t, jwt.SigningMethodHS256, hsSecret, claims(), "rsa-1"), "HS256 is not configured")
	// An unknown kid does not make every request refetch the set.
	for range 5 {
		requireRejected(t, a, sign(t, jwt.SigningMethodRS256, rsaKey, claims(), "unknown"), "unknown kid")
	}
	require.LessOrEqual(t, srv.fetches.Load(), int64(2))
}

func TestJWKSSingleKeyWithoutKid(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, map[string]any{"only": &ecKey.PublicKey})
	a := newAuth(t, iam.AuthConfig{JWKSURL: srv.URL})
	requireAccepted(t, a, sign(t, jwt.SigningMethodES256, ecKey, claims(), ""))
}

func TestJWKSUnavailable(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, map[string]any{"rsa-1": &rsaKey.PublicKey})
	srv.fail.Store(true)
	a := newAuth(t, iam.AuthConfig{JWKSURL: srv.URL})
	requireRejected(t, a, sign(t, jwt.SigningMethodRS256, rsaKey, claims(), "rsa-1"), "the key set cannot be fetched")
}

func TestAlgorithmAllowList(t *testing.T) {
	t.Parallel()
	keyFile := pkixPEM(t, &rsaKey.PublicKey)

	// Both key sources configured, but only RS256 allowed: an HS256 token is refused even with the right secret.
	a := newAuth(t, iam.AuthConfig{HS256Secret: hsSecret, PublicKeyFile: keyFile, Algorithms: []string{"RS256"}})
	requireAccepted(t, a, sign(t, jwt.SigningMethodRS256, rsaKey, claims(), ""))
	requireRejected(t, a, sign(t, jwt.SigningMethodHS256, hsSecret, claims(), ""), "HS256 is not in the allow-list")

	// Without an explicit list, both are allowed.
	both := newAuth(t, iam.AuthConfig{HS256Secret: hsSecret, PublicKeyFile: keyFile})
	requireAccepted(t, both, sign(t, jwt.SigningMethodRS256, rsaKey, claims(), ""))
	requireAccepted(t, both, sign(t, jwt.SigningMethodHS256, hsSecret, claims(), ""))

	// Key confusion: an HS256 token whose HMAC key is the RSA public key must not verify.
	pemBytes, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	requireRejected(t, both, sign(t, jwt.SigningMethodHS256, pemBytes, claims(), ""), "HMAC with the public key")

	// alg none is never accepted, whatever the configuration.
	none := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(), "")
	requireRejected(t, a, none, "alg none")
	requireRejected(t, both, none, "alg none")

	// Unsupported or missing configuration is an error at start, not at the first request.
	for _, cfg := range []iam.AuthConfig{
		{HS256Secret: hsSecret, Algorithms: []string{"none"}},
		{HS256Secret: hsSecret, Algorithms: []string{"HS512"}},
		{HS256Secret: []byte("short")},
		{},
	} {
		_, err := iam.NewAuthenticator(cfg)
		require.Error(t, err, "%+v", cfg)
	}
}

func TestClaims(t *testing.T) {
	t.Parallel()
	a := newAuth(t, iam.AuthConfig{HS256Secret: hsSecret, Issuer: "https://issuer.example", Audience: "ferry"})
	with := func(mutate func(c jwt.MapClaims)) string {
		c := claims()
		c["iss"], c["aud"] = "https://issuer.example", "ferry"
		mutate(c)
		return sign(t, jwt.SigningMethodHS256, hsSecret, c, "")
	}
	now := time.Now()
	requireAccepted(t, a, with(func(jwt.MapClaims) {}))
	requireAccepted(t, a, with(func(c jwt.MapClaims) { c["exp"] = now.Add(-30 * time.Second).Unix() })) // within the skew
	requireAccepted(t, a, with(func(c jwt.MapClaims) { c["nbf"] = now.Add(30 * time.Second).Unix() }))  // within the skew
	requireAccepted(t, a, with(func(c jwt.MapClaims) { c["aud"] = []string{"other", "ferry"} }))        // one of several
	requireRejected(t, a, with(func(c jwt.MapClaims) { c["exp"] = now.Add(-90 * time.Second).Unix() }), "expired")
	requireRejected(t, a, with(func(c jwt.MapClaims) { c["nbf"] = now.Add(90 * time.Second).Unix() }), "not yet valid")
	requireRejected(t, a, with(func(c jwt.MapClaims) { delete(c, "exp") }), "exp is required")
	requireRejected(t, a, with(func(c jwt.MapClaims) { delete(c, "sub") }), "sub is required")
	requireRejected(t, a, with(func(c jwt.MapClaims) { c["sub"] = "" }), "sub is required")
	requireRejected(t, a, with(func(c jwt.MapClaims) { delete(c, "tenancy") }), "tenancy is required")
	requireRejected(t, a, with(func(c jwt.MapClaims) { c["tenancy"] = 42 }), "tenancy must be a string")
	requireRejected(t, a, with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }), "wrong issuer")
	requireRejected(t, a, with(func(c jwt.MapClaims) { delete(c, "iss") }), "missing issuer")
	requireRejected(t, a, with(func(c jwt.MapClaims) { c["aud"] = "other" }), "wrong audience")
	requireRejected(t, a, with(func(c jwt.MapClaims) { delete(c, "aud") }), "missing audience")

	requireRejected(t, a, "", "empty token")
	requireRejected(t, a, "not-a-jwt", "garbage")
	requireRejected(t, a, "a.b.c", "garbage")
	valid := with(func(jwt.MapClaims) {})
	parts := strings.Split(valid, ".")
	forged := claims()
	forged["tenancy"] = "ocid1.tenancy.ferry.local.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	payload, err := json.Marshal(forged)
	require.NoError(t, err)
	requireRejected(t, a, parts[0]+"."+b64(payload)+"."+parts[2], "tampered payload")
}
