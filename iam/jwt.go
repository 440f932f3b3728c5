package iam

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ferry-mq/ferry/persistence"
)

// ClockSkew is how far token times may disagree with ours.
const ClockSkew = 60 * time.Second

// MaxTokenBytes bounds a bearer token: a token is a few hundred bytes; a larger one is refused before it is
// decoded (a probe sends megabytes of claims to make the server parse them).
const MaxTokenBytes = 8 << 10

// AuthConfig configures token verification. Exactly one of the key sources is usually set; several may be.
type AuthConfig struct {
	HS256Secret   []byte   // shared secret (development)
	PublicKeyFile string   // PEM file with an RSA or EC public key (RS256/ES256)
	JWKSURL       string   // JWKS endpoint, fetched and refreshed (RS256/ES256)
	Algorithms    []string // allow-list; default: the algorithms the configured keys can verify
	Issuer        string   // checked when set
	Audience      string   // checked when set
}

// Claims are the token claims ferry reads.
type Claims struct {
	Tenancy string   `json:"tenancy"`
	Groups  []string `json:"groups,omitempty"`
	jwt.RegisteredClaims
}

// Authenticator verifies bearer tokens.
type Authenticator struct {
	cfg       AuthConfig
	algs      []string
	publicKey any
	jwks      *jwksCache
	verified  verifiedTokens
}

// verifiedTokens remembers tokens that passed verification until they expire, so that a client sending the same
// token on every call pays for the signature check and claim parsing once (they were ~4 % of a data-plane call).
// A token's validity depends only on its bytes and the time (nbf, exp), both rechecked on a hit.
type verifiedTokens struct {
	mu     sync.Mutex
	tokens map[string]verifiedToken
}

type verifiedToken struct {
	principal *Principal
	notBefore time.Time
	expires   time.Time
}

const verifiedTokensMax = 10000

func (v *verifiedTokens) get(token string) *Principal {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.tokens[token]
	if !ok {
		return nil
	}
	now := time.Now()
	if now.After(t.expires.Add(ClockSkew)) || now.Before(t.notBefore.Add(-ClockSkew)) {
		delete(v.tokens, token)
		return nil
	}
	return t.principal
}

func (v *verifiedTokens) put(token string, p *Principal, notBefore, expires time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.tokens == nil || len(v.tokens) >= verifiedTokensMax {
		v.tokens = make(map[string]verifiedToken)
	}
	v.tokens[token] = verifiedToken{principal: p, notBefore: notBefore, expires: expires}
}

// NewAuthenticator checks cfg and loads the key material.
func NewAuthenticator(cfg AuthConfig) (*Authenticator, error) {
	a := &Authenticator{cfg: cfg}
	var defaults []string
	if len(cfg.HS256Secret) > 0 {
		if len(cfg.HS256Secret) < 32 {
			return nil, errors.New("iam: the HS256 secret must be at least 32 bytes")
		}
		defaults = append(defaults, "HS256")
	}
	if cfg.PublicKeyFile != "" {
		key, err := loadPublicKey(cfg.PublicKeyFile)
		if err != nil {
			return nil, err
		}
		a.publicKey = key
		switch key.(type) {
		case *rsa.PublicKey:
			defaults = append(defaults, "RS256")
		case *ecdsa.PublicKey:
			defaults = append(defaults, "ES256")
		}
	}
	if cfg.JWKSURL != "" {
		a.jwks = newJWKSCache(cfg.JWKSURL)
		defaults = append(defaults, "RS256", "ES256")
	}
	a.algs = cfg.Algorithms
	if len(a.algs) == 0 {
		a.algs = defaults
	}
	if len(a.algs) == 0 {
		return nil, errors.New("iam: no token verification key configured (HS256 secret, public key file or JWKS URL)")
	}
	for _, alg := range a.algs {
		if !slices.Contains([]string{"HS256", "RS256", "ES256"}, alg) {
			return nil, fmt.Errorf("iam: algorithm %q is not supported (HS256, RS256, ES256)", alg)
		}
	}
	return a, nil
}

// Authenticate verifies a bearer token and returns its principal.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (*Principal, error) {
	if p := a.verified.get(token); p != nil {
		return p, nil
	}
	if err := checkTokenForm(token); err != nil {
		return nil, err
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(a.algs), // "none" is never in the list
		jwt.WithLeeway(ClockSkew),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), // an iat later than now (beyond the skew) is refused
	}
	if a.cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(a.cfg.Issuer))
	}
	if a.cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(a.cfg.Audience))
	}
	var claims Claims
	_, err := jwt.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) { return a.key(ctx, t) }, opts...)
	if err != nil {
		return nil, err
	}
	if claims.Subject == "" {
		return nil, errors.New("the token has no sub claim")
	}
	if claims.Tenancy == "" {
		return nil, errors.New("the token has no tenancy claim")
	}
	// The tenancy is looked up in the database, the subject and groups are compared with stored text: text the
	// database cannot hold is no identity (and must not surface as a database error).
	for _, v := range append([]string{claims.Tenancy, claims.Subject}, claims.Groups...) {
		if why := persistence.TextProblem(v); why != "" {
			return nil, fmt.Errorf("the token's claims %s", why)
		}
	}
	p := &Principal{Subject: claims.Subject, TenancyID: claims.Tenancy, Groups: claims.Groups}
	var notBefore time.Time
	if claims.NotBefore != nil {
		notBefore = claims.NotBefore.Time
	}
	a.verified.put(token, p, notBefore, claims.ExpiresAt.Time)
	return p, nil
}

func (a *Authenticator) key(ctx context.Context, t *jwt.Token) (any, error) {
	switch t.Method.Alg() {
	case "HS256":
		if len(a.cfg.HS256Secret) == 0 {
			return nil, errors.New("HS256 is not configured")
		}
		return a.cfg.HS256Secret, nil
	case "RS256", "ES256":
		if kid, _ := t.Header["kid"].(string); a.jwks != nil && (kid != "" || a.publicKey == nil) {
			return a.jwks.key(ctx, kid, t.Method.Alg())
		}
		if a.publicKey == nil {
			return nil, errors.New("no public key configured")
		}
		return a.publicKey, nil
	}
	return nil, fmt.Errorf("algorithm %s is not allowed", t.Method.Alg())
}

// checkTokenForm refuses what the JWT library would let through but ferry does not accept: tokens over
// MaxTokenBytes, a header with a crit parameter (RFC 7515 section 4.1.11: ferry understands no extension, so a
// token that needs one must be refused), a payload that is not UTF-8 (encoding/json would replace the bad bytes),
// and time claims that are not JSON numbers ("exp":"1700000000" is decoded as a number by the library).
func checkTokenForm(token string) error {
	if len(token) > MaxTokenBytes {
		return fmt.Errorf("the token is longer than %d bytes", MaxTokenBytes)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("the token must have three segments")
	}
	var header map[string]json.RawMessage
	if raw, err := jwtSegment(parts[0]); err != nil || json.Unmarshal(raw, &header) != nil {
		return errors.New("the token's header is not a base64url JSON object")
	}
	if _, ok := header["crit"]; ok {
		return errors.New("the token's header names critical extensions (crit) that ferry does not understand")
	}
	raw, err := jwtSegment(parts[1])
	var claims map[string]json.RawMessage
	if err != nil || !utf8.Valid(raw) || json.Unmarshal(raw, &claims) != nil {
		return errors.New("the token's payload is not a base64url UTF-8 JSON object")
	}
	for _, name := range []string{"exp", "iat", "nbf"} {
		if v, ok := claims[name]; ok && (len(v) == 0 || v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
			return fmt.Errorf("the token's %s claim must be a number", name)
		}
	}
	return nil
}

// jwtSegment decodes a token segment as the JWT library does (base64url, padding tolerated).
func jwtSegment(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// IssueHS256 signs a token for subject in tenancy (ferry token, tests).
func IssueHS256(secret []byte, tenancyID, subject string, groups []string, ttl time.Duration) (string, error) {
	now := time.Now()
	claims := Claims{
		Tenancy: tenancyID,
		Groups:  groups,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   subject,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}

func loadPublicKey(path string) (any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("iam: public key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("iam: public key %s: no PEM block", path)
	}
	if block.Type == "CERTIFICATE" {
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("iam: public key %s: %w", path, err)
		}
		return cert.PublicKey, nil
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		if rsaKey, err2 := x509.ParsePKCS1PublicKey(block.Bytes); err2 == nil {
			return rsaKey, nil
		}
		return nil, fmt.Errorf("iam: public key %s: %w", path, err)
	}
	return key, nil
}
