package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// authClaims are valid claims for tenancyID; tests mutate a copy to build a bad token.
func authClaims(tenancyID string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"sub": "admin", "tenancy": tenancyID, "groups": []string{"Administrators"},
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

func authSign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	require.NoError(t, err)
	return s
}

// TestAuthentication sends tokens that must all be refused with 401 NotAuthenticated and the JSON error body, and
// tokens that look odd but are valid.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	srv, tenancyID, _ := testserver.StartAdmin(t)
	path := "/20210201/queues?compartmentId=" + tenancyID
	now := time.Now()
	hs := func(mutate func(c jwt.MapClaims)) string {
		c := authClaims(tenancyID)
		mutate(c)
		return authSign(t, jwt.SigningMethodHS256, srv.Secret, c)
	}
	valid := hs(func(jwt.MapClaims) {})
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	parts := strings.Split(valid, ".")
	forged, err := json.Marshal(authClaims("ocid1.tenancy.ferry.local." + strings.Repeat("z", 32)))
	require.NoError(t, err)

	refused := []struct {
		name          string
		authorization string // the whole header; "" sends none
	}{
		{"missing header", ""},
		{"basic scheme", "Basic YWRtaW46YWRtaW4="},
		{"token without scheme", valid},
		{"bearer without token", "Bearer "},
		{"bearer with blanks", "Bearer    "},
		{"garbage token", "Bearer not-a-jwt"},
		{"three garbage segments", "Bearer a.b.c"},
		{"expired beyond the skew", "Bearer " + hs(func(c jwt.MapClaims) { c["exp"] = now.Add(-2 * time.Minute).Unix() })},
		{"not yet valid beyond the skew", "Bearer " + hs(func(c jwt.MapClaims) { c["nbf"] = now.Add(2 * time.Minute).Unix() })},
		{"without exp", "Bearer " + hs(func(c jwt.MapClaims) { delete(c, "exp") })},
		{"wrong signature", "Bearer " + authSign(t, jwt.SigningMethodHS256, []byte(strings.Repeat("x", 64)), authClaims(tenancyID))},
		{"tampered payload", "Bearer " + parts[0] + "." + jwtSegment(forged) + "." + parts[2]},
		{"alg none", "Bearer " + authSign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, authClaims(tenancyID))},
		{"alg none without signature", "Bearer " + jwtSegment([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."},
		{"RS256 when only HS256 is configured", "Bearer " + authSign(t, jwt.SigningMethodRS256, rsaKey, authClaims(tenancyID))},
		{"ES256 when only HS256 is configured", "Bearer " + authSign(t, jwt.SigningMethodES256, ecKey, authClaims(tenancyID))},
		{"HS512 with the right secret", "Bearer " + authSign(t, jwt.SigningMethodHS512, srv.Secret, authClaims(tenancyID))},
		{"missing tenancy claim", "Bearer " + hs(func(c jwt.MapClaims) { delete(c, "tenancy") })},
		{"tenancy claim not a string", "Bearer " + hs(func(c jwt.MapClaims) { c["tenancy"] = 7 })},
		{"missing sub", "Bearer " + hs(func(c jwt.MapClaims) { delete(c, "sub") })},
		{"empty sub", "Bearer " + hs(func(c jwt.MapClaims) { c["sub"] = "" })},
		{"tenancy that does not exist", "Bearer " + hs(func(c jwt.MapClaims) {
			c["tenancy"] = "ocid1.tenancy.ferry.local." + strings.Repeat("q", 32)
		})},
		{"tenancy that is not an OCID", "Bearer " + hs(func(c jwt.MapClaims) { c["tenancy"] = "x' OR '1'='1" })},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			var headers []string
			if tc.authorization != "" {
				headers = []string{"Authorization", tc.authorization}
			}
			for _, call := range []struct{ method, path, body string }{
				{http.MethodGet, path, ""},
				{http.MethodPost, "/20210201/queues", `{"compartmentId":"` + tenancyID + `","displayName":"x"}`},
				{http.MethodGet, "/20210201/workRequests/ocid1.workrequest.ferry.local." + strings.Repeat("a", 32), ""},
			} {
				var body *strings.Reader
				contentType := ""
				if call.body != "" {
					body, contentType = strings.NewReader(call.body), "application/json"
				}
				var resp testserver.RawResponse
				if body != nil {
					resp = srv.Raw(t, "", call.method, call.path, contentType, body, headers...)
				} else {
					resp = srv.Raw(t, "", call.method, call.path, "", nil, headers...)
				}
				require.Equal(t, http.StatusUnauthorized, resp.Status, "%s %s: %s", call.method, call.path, resp.Body)
				require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"))
				e2e.RequireErrorBody(t, resp.Body, "NotAuthenticated")
			}
		})
	}
	// Nothing was created by the refused POSTs.
	client := srv.Client(t, valid)
	require.Empty(t, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)}))

	accepted := []struct{ name, authorization string }{
		{"valid", "Bearer " + valid},
		{"expired within the skew", "Bearer " + hs(func(c jwt.MapClaims) { c["exp"] = now.Add(-30 * time.Second).Unix() })},
		{"not yet valid within the skew", "Bearer " + hs(func(c jwt.MapClaims) { c["nbf"] = now.Add(30 * time.Second).Unix() })},
		{"lowercase scheme", "bearer " + valid}, // RFC 7235: the scheme is case-insensitive
	}
	// A token without groups authenticates (no 401) but no policy grants it anything: 404, as for a missing resource.
	noGroups := srv.Raw(t, "", http.MethodGet, path, "", nil, "Authorization", "Bearer "+hs(func(c jwt.MapClaims) { delete(c, "groups") }))
	require.Equal(t, http.StatusNotFound, noGroups.Status, "without groups: %s", noGroups.Body)
	for _, tc := range accepted {
		resp := srv.Raw(t, "", http.MethodGet, path, "", nil, "Authorization", tc.authorization)
		require.Equal(t, http.StatusOK, resp.Status, "%s: %s", tc.name, resp.Body)
	}
}

func jwtSegment(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// TestAuthenticationIssuerAudience checks iss and aud when the server is configured to.
func TestAuthenticationIssuerAudience(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, func(c *server.Config) { c.JWTIssuer, c.JWTAudience = "https://login.example", "ferry" })
	tenancyID := srv.Tenancy(t, "iss-aud")
	path := "/20210201/compartments/" + tenancyID
	token := func(mutate func(c jwt.MapClaims)) string {
		c := authClaims(tenancyID)
		c["iss"], c["aud"] = "https://login.example", "ferry"
		mutate(c)
		return authSign(t, jwt.SigningMethodHS256, srv.Secret, c)
	}
	require.Equal(t, http.StatusOK, srv.Raw(t, token(func(jwt.MapClaims) {}), http.MethodGet, path, "", nil).Status)
	for name, mutate := range map[string]func(c jwt.MapClaims){
		"wrong issuer":     func(c jwt.MapClaims) { c["iss"] = "https://evil.example" },
		"missing issuer":   func(c jwt.MapClaims) { delete(c, "iss") },
		"wrong audience":   func(c jwt.MapClaims) { c["aud"] = "someone-else" },
		"missing audience": func(c jwt.MapClaims) { delete(c, "aud") },
	} {
		resp := srv.Raw(t, token(mutate), http.MethodGet, path, "", nil)
		require.Equal(t, http.StatusUnauthorized, resp.Status, "%s: %s", name, resp.Body)
		e2e.RequireErrorBody(t, resp.Body, "NotAuthenticated")
	}
	// The testserver's own tokens carry neither claim.
	resp := srv.Raw(t, srv.Token(t, tenancyID, "admin", "Administrators"), http.MethodGet, path, "", nil)
	require.Equal(t, http.StatusUnauthorized, resp.Status)
}

// TestAuthenticationPublicKey runs a server that verifies RS256 tokens with a public key file, next to HS256.
func TestAuthenticationPublicKey(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "jwt.pem")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))

	srv := testserver.Start(t, func(c *server.Config) { c.JWTPublicKeyFile = keyFile; c.JWTAlgorithms = []string{"RS256"} })
	tenancyID := srv.Tenancy(t, "rs256")
	path := "/20210201/compartments/" + tenancyID

	resp := srv.Raw(t, authSign(t, jwt.SigningMethodRS256, key, authClaims(tenancyID)), http.MethodGet, path, "", nil)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	for name, token := range map[string]string{
		"another key":            authSign(t, jwt.SigningMethodRS256, other, authClaims(tenancyID)),
		"HS256 not in allowlist": srv.Token(t, tenancyID, "admin", "Administrators"),
		"HMAC with the key file": authSign(t, jwt.SigningMethodHS256, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), authClaims(tenancyID)),
	} {
		resp := srv.Raw(t, token, http.MethodGet, path, "", nil)
		require.Equal(t, http.StatusUnauthorized, resp.Status, "%s: %s", name, resp.Body)
		e2e.RequireErrorBody(t, resp.Body, "NotAuthenticated")
	}
}

// TestPublicEndpoints checks the operational endpoints, which need no JWT.
func TestPublicEndpoints(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	client.NewNamedQueue(t, tenancyID, "counted")

	for _, authorization := range []string{"", "Bearer garbage"} {
		var headers []string
		if authorization != "" {
			headers = []string{"Authorization", authorization}
		}
		health := srv.Raw(t, "", http.MethodGet, "/healthz", "", nil, headers...)
		require.Equal(t, http.StatusOK, health.Status, "%s", health.Body)
		require.JSONEq(t, `{"status":"ok"}`, string(health.Body))

		ready := srv.Raw(t, "", http.MethodGet, "/readyz", "", nil, headers...)
		require.Equal(t, http.StatusOK, ready.Status, "%s", ready.Body)
		require.Contains(t, string(ready.Body), `"status"`)

		spec := srv.Raw(t, "", http.MethodGet, "/openapi.yaml", "", nil, headers...)
		require.Equal(t, http.StatusOK, spec.Status)
		require.True(t, strings.HasPrefix(spec.Header.Get("Content-Type"), "application/yaml"), spec.Header.Get("Content-Type"))
		var doc struct {
			OpenAPI string         `yaml:"openapi"`
			Paths   map[string]any `yaml:"paths"`
		}
		require.NoError(t, yaml.Unmarshal(spec.Body, &doc))
		require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), doc.OpenAPI)
		for _, p := range []string{"/20210201/compartments", "/20210201/queues/{queueId}", "/20210201/workRequests/{workRequestId}"} {
			require.Contains(t, doc.Paths, p)
		}
	}

	// Through the SDK, without a token.
	anonymous := srv.Client(t, "")
	h, err := anonymous.HealthzWithResponse(t.Context(), &sdk.HealthzParams{})
	e2e.RequireStatus(t, h, err, http.StatusOK)
	require.Equal(t, "ok", h.JSON200.Status)
	r, err := anonymous.ReadyzWithResponse(t.Context(), &sdk.ReadyzParams{})
	e2e.RequireStatus(t, r, err, http.StatusOK)
	s, err := anonymous.GetOpenAPISpecWithResponse(t.Context(), &sdk.GetOpenAPISpecParams{})
	e2e.RequireStatus(t, s, err, http.StatusOK)
	require.Contains(t, string(s.Body), "operationId: CreateQueue")
	require.NotNil(t, s.YAML200, "the SDK decodes the document")
	require.Contains(t, *s.YAML200, "paths")
	require.Equal(t, "3.0.3", (*s.YAML200)["openapi"])
	m, err := anonymous.MetricsWithResponse(t.Context(), &sdk.MetricsParams{})
	e2e.RequireStatus(t, m, err, http.StatusNotFound) // operators' metrics are on their own listener (metrics_test.go)

	// Everything else needs a token; an unknown route answers 404 either way.
	resp := srv.Raw(t, "", http.MethodGet, "/20210201/compartments/"+tenancyID, "", nil)
	require.Equal(t, http.StatusUnauthorized, resp.Status)
	e2e.RequireErrorBody(t, resp.Body, "NotAuthenticated")
	resp = srv.Raw(t, "", http.MethodGet, "/20210201/nope", "", nil)
	require.Equal(t, http.StatusNotFound, resp.Status)
	e2e.RequireErrorBody(t, resp.Body, "NotAuthorizedOrNotFound")
	resp = srv.Raw(t, "", http.MethodPost, "/healthz", "", nil)
	require.Equal(t, http.StatusMethodNotAllowed, resp.Status)
	e2e.RequireErrorBody(t, resp.Body, "MethodNotAllowed")
}
