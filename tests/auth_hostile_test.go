package tests

import (
	"crypto/hmac"
	"crypto/sha256"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestAuthenticationHostileTokens: what a probe sends to confuse the token check is refused with 401
// NotAuthenticated — never accepted, never a 500.
func TestAuthenticationHostileTokens(t *testing.T) {
	t.Parallel()
	srv, tenancyID, _ := testserver.StartAdmin(t)
	path := "/20210201/queues?compartmentId=" + tenancyID
	now := time.Now()
	hs := func(mutate func(c jwt.MapClaims)) string {
		c := authClaims(tenancyID)
		mutate(c)
		return authSign(t, jwt.SigningMethodHS256, srv.Secret, c)
	}
	// signed signs a hand-written header and payload (what the JWT library would not produce).
	signed := func(header, payload string) string {
		input := jwtSegment([]byte(header)) + "." + jwtSegment([]byte(payload))
		mac := hmac.New(sha256.New, srv.Secret)
		mac.Write([]byte(input))
		return input + "." + jwtSegment(mac.Sum(nil))
	}
	valid := hs(func(jwt.MapClaims) {})
	exp := now.Add(time.Hour).Unix()
	claimsWith := func(tenancy string) string {
		return `{"sub":"admin","tenancy":"` + tenancy + `","groups":["Administrators"],"exp":` + itoa64(exp) + `}`
	}
	const hsHeader = `{"alg":"HS256","typ":"JWT"}`
	require.Equal(t, http.StatusOK, call(t, srv, path, "Bearer "+signed(hsHeader, claimsWith(tenancyID))).StatusCode,
		"the hand-written token is valid as written")

	for _, tc := range []struct{ name, authorization string }{
		{"iat in the future beyond the skew", "Bearer " + hs(func(c jwt.MapClaims) { c["iat"] = now.Add(10 * time.Minute).Unix() })},
		{"exp as a string", "Bearer " + hs(func(c jwt.MapClaims) { c["exp"] = itoa64(exp) })},
		{"iat as a string", "Bearer " + hs(func(c jwt.MapClaims) { c["iat"] = itoa64(now.Unix()) })},
		{"nbf as a string", "Bearer " + hs(func(c jwt.MapClaims) { c["nbf"] = itoa64(now.Unix()) })},
		{"exp null", "Bearer " + hs(func(c jwt.MapClaims) { c["exp"] = nil })},
		{"unknown crit header", "Bearer " + signed(`{"alg":"HS256","typ":"JWT","crit":["exp"],"exp":1}`, claimsWith(tenancyID))},
		{"empty crit header", "Bearer " + signed(`{"alg":"HS256","crit":[]}`, claimsWith(tenancyID))},
		{"token over 8 KiB", "Bearer " + hs(func(c jwt.MapClaims) { c["pad"] = strings.Repeat("p", 8<<10) })},
		{"NUL in the tenancy claim", "Bearer " + signed(hsHeader, claimsWith(`ocid1.tenancy\u0000`))},
		{"NUL after a valid tenancy", "Bearer " + signed(hsHeader, claimsWith(tenancyID+`\u0000`))},
		{"invalid UTF-8 in the tenancy claim", "Bearer " + signed(hsHeader, claimsWith("ocid1.tenancy.\xff"))},
		{"lone surrogate in the tenancy claim", "Bearer " + signed(hsHeader, claimsWith(`\ud800`))},
		{"NUL in the subject", "Bearer " + hs(func(c jwt.MapClaims) { c["sub"] = "ad\x00min" })},
		{"NUL in a group", "Bearer " + hs(func(c jwt.MapClaims) { c["groups"] = []string{"Administrators\x00"} })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := call(t, srv, path, tc.authorization)
			body, _ := io.ReadAll(resp.Body)
			e2e.RequireAPIError(t, resp.StatusCode, body, http.StatusUnauthorized, "NotAuthenticated")
		})
	}

	t.Run("two Authorization headers", func(t *testing.T) {
		for _, pair := range [][2]string{
			{"Bearer " + valid, "Bearer " + valid},
			{"Bearer " + valid, "Bearer not-a-jwt"},
			{"Bearer " + valid, ""},
			{"Basic YWRtaW46YWRtaW4=", "Bearer " + valid},
		} {
			resp := call(t, srv, path, pair[0], pair[1])
			body, _ := io.ReadAll(resp.Body)
			e2e.RequireAPIError(t, resp.StatusCode, body, http.StatusUnauthorized, "NotAuthenticated", "one Authorization header")
		}
	})

	t.Run("still accepted", func(t *testing.T) {
		for name, token := range map[string]string{
			"iat within the skew": hs(func(c jwt.MapClaims) { c["iat"] = now.Add(30 * time.Second).Unix() }),
			"fractional exp":      hs(func(c jwt.MapClaims) { c["exp"] = float64(exp) + 0.5 }),
			"token just under 8 KiB": hs(func(c jwt.MapClaims) {
				c["pad"] = strings.Repeat("p", 5<<10)
			}),
		} {
			require.Equal(t, http.StatusOK, call(t, srv, path, "Bearer "+token).StatusCode, name)
		}
	})
}

// call sends GET path with the given Authorization header values (each one a header line of its own).
func call(t *testing.T, srv *testserver.Server, path string, authorization ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	for _, a := range authorization {
		req.Header.Add("Authorization", a)
	}
	resp, err := srv.HTTP.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
