package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/persistence/testdb"
	"github.com/ferry-mq/ferry/tests/testserver"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// TestQuickstartExample follows the README's Terraform section as a user would: make terraform-provider, then,
// with the CLI configuration it wrote (dev_overrides, no registry), terraform apply, plan and destroy of
// terraform/examples/quickstart against a running ferry (a real listener). There is no terraform init: with
// dev_overrides Terraform needs none for ferry-mq/ferry, and init would ask the registry for it and fail offline.
func TestQuickstartExample(t *testing.T) {
	terraform, err := exec.LookPath("terraform")
	if err != nil {
		terraform = "/usr/local/bin/terraform"
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	run(t, root, nil, "make", "--no-print-directory", "terraform-provider")

	tn := testserver.StartTenancy(t, "tf-example")
	work := t.TempDir() // terraform writes its state beside the configuration: keep the repository clean
	example, err := os.ReadFile(filepath.Join(root, "terraform", "examples", "quickstart", "main.tf"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(work, "main.tf"), example, 0o600))
	env := []string{
		"TF_CLI_CONFIG_FILE=" + filepath.Join(root, "bin", "terraformrc"),
		"FERRY_ENDPOINT=" + tn.Server.URL,
		"FERRY_TOKEN=" + tn.Server.AdminToken(t, tn.ID),
		"TF_VAR_compartment_id=" + tn.ID,
		"CHECKPOINT_DISABLE=1",
		"TF_IN_AUTOMATION=1",
		"HOME=" + t.TempDir(),
	}

	run(t, work, env, terraform, "apply", "-auto-approve", "-input=false", "-no-color")
	queueID := strings.TrimSpace(run(t, work, env, terraform, "output", "-raw", "queue_id"))
	resp, err := tn.Admin.GetQueueWithResponse(context.Background(), queueID, &sdk.GetQueueParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, 60, resp.JSON200.VisibilityInSeconds)
	require.Contains(t, run(t, work, env, terraform, "output", "-json", "consumer_groups"), `["billing","primary"]`)

	// The second plan shows no changes: -detailed-exitcode answers 0 for an empty plan and 2 for changes.
	run(t, work, env, terraform, "plan", "-detailed-exitcode", "-input=false", "-no-color")

	run(t, work, env, terraform, "destroy", "-auto-approve", "-input=false", "-no-color")
	resp, err = tn.Admin.GetQueueWithResponse(context.Background(), queueID, &sdk.GetQueueParams{})
	require.NoError(t, err)
	if resp.StatusCode() == http.StatusOK {
		require.Equal(t, sdk.LifecycleStateDELETED, resp.JSON200.LifecycleState, "destroy waits for the deletion")
	}
}

// run runs a command in dir with env added, requires its success, and returns its standard output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "%s %s\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}
