package testserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
)

// Tenancy is a started server with one tenancy, its administrator, and a way to mint other principals.
type Tenancy struct {
	Server   *Server
	ID       string
	Admin    *e2e.Client
	policies atomic.Int64 // names policies uniquely within the tenancy
}

// StartTenancy starts a server and creates a tenancy (named prefix and the test's name) whose administrator sets
// up resources and policies.
func StartTenancy(t testing.TB, prefix string, opts ...Option) *Tenancy {
	t.Helper()
	srv := Start(t, opts...)
	id, admin := srv.Admin(t, prefix+"-"+strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	return &Tenancy{Server: srv, ID: id, Admin: admin}
}

// StartAdmin starts a server and creates a tenancy (named after the test) with an administrator client: what
// most scenarios start with.
func StartAdmin(t testing.TB, opts ...Option) (srv *Server, tenancyID string, admin *e2e.Client) {
	t.Helper()
	tn := StartTenancy(t, "tenancy", opts...)
	return tn.Server, tn.ID, tn.Admin
}

// Token signs a token for subject with groups in the tenancy.
func (tn *Tenancy) Token(t testing.TB, subject string, groups ...string) string {
	t.Helper()
	return tn.Server.Token(t, tn.ID, subject, groups...)
}

// Client is a client for subject with groups in the tenancy.
func (tn *Tenancy) Client(t testing.TB, subject string, groups ...string) *e2e.Client {
	t.Helper()
	return tn.Server.Client(t, tn.Token(t, subject, groups...))
}

// Policy creates a policy (uniquely named) in compartmentID with the admin client and returns it.
func (tn *Tenancy) Policy(t testing.TB, compartmentID string, statements ...string) sdk.Policy {
	t.Helper()
	return tn.Admin.NewPolicy(t, compartmentID, fmt.Sprintf("policy-%d", tn.policies.Add(1)), statements...)
}

// AdminToken signs a token for an Administrators member of tenancyID.
func (s *Server) AdminToken(t testing.TB, tenancyID string) string {
	t.Helper()
	return s.Token(t, tenancyID, "admin", "Administrators")
}

// RawResponse is an answer read by Raw.
type RawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// Raw sends a request with net/http, for what the SDK cannot send (malformed bodies, wrong types, bad headers).
// An empty token sends no Authorization header, an empty contentType no Content-Type; headers are name/value
// pairs.
func (s *Server) Raw(t testing.TB, token, method, path, contentType string, body io.Reader, headers ...string) RawResponse {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, body)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := s.HTTP.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return RawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// RawJSON is Raw with a JSON body (when body is not nil).
func (s *Server) RawJSON(t testing.TB, token, method, path string, body io.Reader) RawResponse {
	t.Helper()
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	return s.Raw(t, token, method, path, contentType, body)
}

// Call sends one request with token; a non-nil body is marshalled to JSON.
func (s *Server) Call(t testing.TB, token, method, path string, body any) RawResponse {
	t.Helper()
	if body == nil {
		return s.RawJSON(t, token, method, path, nil)
	}
	b, err := json.Marshal(body)
	require.NoError(t, err)
	return s.RawJSON(t, token, method, path, bytes.NewReader(b))
}

// WaitWorkRequest drives the executor and waits until the work request has finished, then returns it.
func (s *Server) WaitWorkRequest(t testing.TB, client *e2e.Client, id string) sdk.WorkRequest {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.GetWorkRequestWithResponse(ctx, id, &sdk.GetWorkRequestParams{})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
		switch resp.JSON200.Status {
		case sdk.WorkRequestStatusSUCCEEDED, sdk.WorkRequestStatusFAILED, sdk.WorkRequestStatusCANCELED:
			return *resp.JSON200
		}
		require.True(t, time.Now().Before(deadline), "work request %s is still %s", id, resp.JSON200.Status)
		// The background executor was woken when the request was accepted; running one here too only speeds
		// things up (claims use SKIP LOCKED, so the two never execute the same request). The sleep is the
		// interval of this bounded poll.
		if !s.Node.Executor().RunOnce(ctx) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Purge purges a queue through client and waits for the work request to succeed.
func (s *Server) Purge(t testing.TB, client *e2e.Client, queueID string, purgeType sdk.PurgeType, opts ...e2e.PurgeOption) {
	t.Helper()
	wr := client.StartPurge(t, queueID, purgeType, opts...)
	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, s.WaitWorkRequest(t, client, wr).Status, "purge %s", purgeType)
}

// StoredMessages counts the rows of the messages table (every queue of the test's database when queueID is "").
func (s *Server) StoredMessages(t testing.TB, queueID string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, s.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM messages WHERE $1 = '' OR queue_no = (SELECT no FROM queues WHERE id = $1)`, queueID).Scan(&n))
	return n
}

// RunMaintainer runs one maintenance cycle (waiting for the node's own loop to release the lock if it holds it: a
// cycle over 10,000 queues on a loaded machine took longer than 10 s once).
func (s *Server) RunMaintainer(t testing.TB) {
	t.Helper()
	require.Eventually(t, func() bool {
		ran, err := s.Node.Maintainer().RunOnce(context.Background())
		require.NoError(t, err)
		return ran
	}, time.Minute, 10*time.Millisecond)
}

// AdvanceClock moves the data plane's clock forward by d for this server's database without waiting: the stored
// times that the data plane compares with PostgreSQL's now() — messages' visibility and expiry, deduplication
// keys' expiry, the id watermarks the maintainer's retention uses — move back by d. Retention and deduplication
// windows are tested this way instead of by sleeping through them; nothing in ferry changes. Nodes' in-memory
// caches (queue settings, sizes) are not moved.
func (s *Server) AdvanceClock(t testing.TB, d time.Duration) {
	t.Helper()
	if d <= 0 {
		return
	}
	ctx := context.Background()
	shift := fmt.Sprintf("%d microseconds", d.Microseconds())
	for _, stmt := range []string{
		`UPDATE messages SET visible_at = visible_at - $1::interval, expire_at = expire_at - $1::interval`,
		`UPDATE message_ranges SET visible_at = visible_at - $1::interval`,
		`UPDATE message_dedup_keys SET expire_at = expire_at - $1::interval`,
		`UPDATE message_id_watermarks SET time_recorded = time_recorded - $1::interval`,
		`UPDATE partition_messages SET created_at = created_at - $1::interval, expire_at = expire_at - $1::interval`,
	} {
		_, err := s.Pool.Exec(ctx, stmt, shift)
		require.NoError(t, err, stmt)
	}
}

// MetricValue sums the samples of a Prometheus metric (name or name_total) that carry the queue label, and
// requires at least one.
func (s *Server) MetricValue(t testing.TB, name, queueID string) float64 {
	t.Helper()
	resp, err := s.HTTP.Client().Get(s.MetricsURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+"_total{") {
			continue
		}
		if !strings.Contains(line, `queue="`+queueID+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(t, err, line)
		sum += v
		found = true
	}
	require.NoError(t, sc.Err())
	require.True(t, found, "no %s sample for queue %s in /metrics", name, queueID)
	return sum
}

// Scrape reads the node's metrics listener (the Prometheus text format).
func (s *Server) Scrape(t testing.TB) string {
	t.Helper()
	resp, err := s.HTTP.Client().Get(s.MetricsURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
