package oci

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/identity"
	"github.com/oracle/oci-go-sdk/v65/queue"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// env is one ferry server and one tenancy, driven by OCI's SDK clients of the tenancy's administrator. Set-ups
// that are not the operation under test go through ferry's own SDK (ferry), so that each operation's test fails
// only for that operation's shapes.
type env struct {
	srv      *testserver.Server
	tenancy  string
	token    string
	ferry    *e2e.Client
	admin    queue.QueueAdminClient
	identity identity.IdentityClient
}

// callTimeout bounds every test's SDK calls. The SDK's default retry policy retries some failures (409
// IncorrectState, 429, 5xx, and, for a while after a compartment changed, 404) with backoffs of seconds to
// minutes; with a deadline it gives up as soon as the next backoff would pass it, so a failing operation fails in
// seconds instead.
const callTimeout = 15 * time.Second

// start starts a server with a tenancy and the OCI SDK clients of its administrator.
func start(t *testing.T) *env {
	t.Helper()
	srv := testserver.Start(t)
	tenancyID := srv.Tenancy(t, "oci-"+strings.ToLower(t.Name()))
	e := &env{srv: srv, tenancy: tenancyID, token: srv.AdminToken(t, tenancyID)}
	e.ferry = srv.Client(t, e.token)
	provider := configurationProvider(t, tenancyID)

	var err error
	e.admin, err = queue.NewQueueAdminClientWithConfigurationProvider(provider)
	require.NoError(t, err)
	e.admin.Host, e.admin.Signer = srv.URL, bearer(e.token)
	e.identity, err = identity.NewIdentityClientWithConfigurationProvider(provider)
	require.NoError(t, err)
	e.identity.Host, e.identity.Signer = srv.URL, bearer(e.token)
	return e
}

// messages is a data-plane client of the queue's messagesEndpoint, as OCI's documentation tells users to build it.
func (e *env) messages(t *testing.T, endpoint string) queue.QueueClient {
	t.Helper()
	c, err := queue.NewQueueClientWithConfigurationProvider(configurationProvider(t, e.tenancy))
	require.NoError(t, err)
	c.Host, c.Signer = endpoint, bearer(e.token)
	return c
}

// bearer signs requests with ferry's bearer token instead of OCI's HTTP signature (common.HTTPRequestSigner).
type bearer string

// Sign sets the Authorization header.
func (b bearer) Sign(r *http.Request) error {
	r.Header.Set("Authorization", "Bearer "+string(b))
	return nil
}

var _ common.HTTPRequestSigner = bearer("")

// apiKey is a throw-away RSA key in PEM, made once per test binary: the SDK's clients refuse a configuration
// without a valid private key, although the bearer signer never uses it.
var apiKey = sync.OnceValues(func() (pemKey, fingerprint string) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	der := x509.MarshalPKCS1PrivateKey(key)
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(pub)
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der})), hex.EncodeToString(sum[:16])
})

// configurationProvider is an API-key configuration as an OCI user would have one; only its region matters to
// the clients (it makes their default Host, which start replaces).
func configurationProvider(t *testing.T, tenancyID string) common.ConfigurationProvider {
	t.Helper()
	key, fingerprint := apiKey()
	return common.NewRawConfigurationProvider(tenancyID, "ocid1.user.oc1..ferrytest", "us-ashburn-1", fingerprint, key, nil)
}

// ctx is a context bounded by callTimeout for one test's calls.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), callTimeout)
	t.Cleanup(cancel)
	return c
}

// once is request metadata for a call the test expects to fail: the SDK's default policy would retry a 409
// IncorrectState (and a 404 within its eventual-consistency window) for minutes.
func once() common.RequestMetadata {
	p := common.NoRetryPolicy()
	return common.RequestMetadata{RetryPolicy: &p}
}

// noError requires a call to have succeeded. When the SDK gave up retrying (its default policy retries some
// failures until the next backoff would pass the deadline, and then reports only that), the status of the last
// answer says what failed.
func noError(t *testing.T, last *http.Response, err error) {
	t.Helper()
	if err != nil && last != nil {
		require.NoError(t, err, "the last answer was %s", last.Status)
	}
	require.NoError(t, err)
}

// requireField requires a field of an SDK response (a pointer, nil when the answer lacked it) to be present and
// equal to want.
func requireField[T any](t *testing.T, want T, got *T, msgAndArgs ...any) {
	t.Helper()
	require.NotNil(t, got, append([]any{"the field is missing; want %v"}, want)...)
	require.Equal(t, want, *got, msgAndArgs...)
}

// requireServiceError checks that err is the SDK's ServiceError with the status and code, and that ferry's
// opc-request-id reached it.
func requireServiceError(t *testing.T, err error, status int, code string) common.ServiceError {
	t.Helper()
	require.Error(t, err)
	se, ok := common.IsServiceError(err)
	require.True(t, ok, "want a common.ServiceError, got %T: %v", err, err)
	require.Equal(t, status, se.GetHTTPStatusCode(), "%v", err)
	require.Equal(t, code, se.GetCode(), "%v", err)
	require.NotEmpty(t, se.GetMessage(), "%v", err)
	require.NotEmpty(t, se.GetOpcRequestID(), "%v", err)
	return se
}

// compartment creates a compartment (through ferry's SDK) for one test's resources, so that its lists are its own.
func (e *env) compartment(t *testing.T) string {
	t.Helper()
	return e.ferry.NewCompartment(t, e.tenancy, fmt.Sprintf("c-%d", time.Now().UnixNano())).Id
}

// awaitWorkRequest polls GetWorkRequest, as SDK users do, until the work request has finished, and requires that
// it succeeded.
func (e *env) awaitWorkRequest(t *testing.T, id *string) queue.WorkRequest {
	t.Helper()
	require.NotNil(t, id, "the response has no opc-work-request-id")
	require.True(t, strings.HasPrefix(*id, "ocid1.workrequest."), *id)
	c := ctx(t)
	for {
		resp, err := e.admin.GetWorkRequest(c, queue.GetWorkRequestRequest{WorkRequestId: id})
		noError(t, resp.RawResponse, err)
		switch resp.Status {
		case queue.OperationStatusSucceeded:
			return resp.WorkRequest
		case queue.OperationStatusFailed, queue.OperationStatusCanceled:
			require.Failf(t, "work request did not succeed", "%s: %s", *id, resp.WorkRequest)
		}
		select {
		case <-c.Done():
			require.Failf(t, "work request did not finish", "%s is still %s", *id, resp.Status)
		case <-time.After(20 * time.Millisecond): // the interval of a bounded poll
		}
	}
}

// resourceOf is the identifier of the work request's resource of entityType.
func resourceOf(t *testing.T, w queue.WorkRequest, entityType string) string {
	t.Helper()
	for _, r := range w.Resources {
		if r.EntityType != nil && strings.EqualFold(*r.EntityType, entityType) {
			require.NotNil(t, r.Identifier)
			return *r.Identifier
		}
	}
	require.Failf(t, "no resource", "work request %s has no %s resource: %v", *w.Id, entityType, w.Resources)
	return ""
}

// queueEndpoint is a queue's messagesEndpoint, read through ferry's SDK.
func (e *env) queueEndpoint(t *testing.T, queueID string) string {
	t.Helper()
	q, _ := e.ferry.QueueWithETag(t, queueID)
	require.NotEmpty(t, q.MessagesEndpoint)
	return q.MessagesEndpoint
}

// isNotFound reports whether err is the SDK's 404.
func isNotFound(err error) bool {
	se, ok := common.IsServiceError(err)
	return ok && se.GetHTTPStatusCode() == http.StatusNotFound
}
