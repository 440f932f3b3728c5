package provider

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/persistence/testdb"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// The acceptance tests drive the real terraform binary (terraform-plugin-testing) against a real ferry server on
// a private PostgreSQL (tests/testserver). They switch themselves on, so that go test and make test run them:
// TF_ACC, the terraform binary (TF_ACC_TERRAFORM_PATH, else terraform on PATH, else /usr/local/bin/terraform),
// no calls home (CHECKPOINT_DISABLE), the provider's namespace (so that the in-process provider answers for
// source "ferry-mq/ferry"), and an empty CLI configuration, so that nothing of the machine's (a plugin cache, a
// mirror, a missing file TF_CLI_CONFIG_FILE names) changes what terraform does.
func TestMain(m *testing.M) {
	var err error
	terraform := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if terraform == "" {
		if terraform, err = exec.LookPath("terraform"); err != nil {
			terraform = "/usr/local/bin/terraform"
		}
	}
	for k, v := range map[string]string{
		"TF_ACC":                    "1",
		"TF_ACC_TERRAFORM_PATH":     terraform,
		"CHECKPOINT_DISABLE":        "1",
		"TF_ACC_PROVIDER_NAMESPACE": "ferry-mq",
		"TF_CLI_CONFIG_FILE":        os.DevNull,
		"TF_IN_AUTOMATION":          "1",
	} {
		_ = os.Setenv(k, v)
	}
	// go-plugin copies the in-process provider's stdout and stderr until those pipes close, which
	// terraform-plugin-testing does not wait for after the last step: those copiers are not ferry's goroutines.
	testdb.Main(m, goleak.IgnoreAnyFunction("github.com/hashicorp/go-plugin.copyChan"))
}

// acc is one acceptance test's world: a server, a tenancy, its administrator (a client for checks and for
// changes made outside Terraform) and the administrator's token (the provider's).
type acc struct {
	t       *testing.T
	srv     *testserver.Server
	tenancy string
	admin   *e2e.Client
	token   string
}

func newAcc(t *testing.T) *acc {
	t.Helper()
	tn := testserver.StartTenancy(t, "tf")
	return &acc{t: t, srv: tn.Server, tenancy: tn.ID, admin: tn.Admin, token: tn.Server.AdminToken(t, tn.ID)}
}

// factories serves the provider in the test process (no build, no registry).
func factories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){"ferry": providerserver.NewProtocol6WithError(New("test")())}
}

// config is a configuration of the provider against the test's server with the admin's token, followed by body
// (a format with args).
func (a *acc) config(body string, args ...any) string {
	return providerConfig(a.srv.URL, a.token) + fmt.Sprintf(body, args...)
}

func providerConfig(endpoint, token string) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    ferry = { source = "ferry-mq/ferry" }
  }
}
provider "ferry" {
  endpoint = %q
  token    = %q
}
`, endpoint, token)
}

// queue reads a queue through the API (nil when it is gone or DELETED).
func (a *acc) queue(id string) *sdk.Queue {
	t := a.t
	t.Helper()
	resp, err := a.admin.GetQueueWithResponse(context.Background(), id, &sdk.GetQueueParams{})
	require.NoError(t, err)
	if resp.StatusCode() == http.StatusNotFound || resp.JSON200 != nil && deleted(resp.JSON200.LifecycleState) {
		return nil
	}
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	return resp.JSON200
}

// compartment creates a compartment under the root through the API (for tests that need a second one).
func (a *acc) compartment(name string) string {
	t := a.t
	t.Helper()
	resp, err := a.admin.CreateCompartmentWithResponse(context.Background(), &sdk.CreateCompartmentParams{},
		sdk.CreateCompartmentDetails{CompartmentId: a.tenancy, Name: name})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	return resp.JSON200.Id
}

// idOf is the id of the resource at addr in the state.
func idOf(s *terraform.State, addr string) (string, error) {
	rs, ok := s.RootModule().Resources[addr]
	if !ok {
		return "", fmt.Errorf("%s is not in the state", addr)
	}
	return rs.Primary.ID, nil
}

// withID runs check on the id of the resource at addr (a check that calls the API).
func withID(addr string, check func(id string) error) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		id, err := idOf(s, addr)
		if err != nil {
			return err
		}
		return check(id)
	}
}

// quoted is a Terraform list of strings.
func quoted(list ...string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
