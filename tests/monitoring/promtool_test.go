package monitoring

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The scrape configuration is one Prometheus accepts, its rule files included.
func TestPrometheusConfig(t *testing.T) {
	t.Parallel()
	promtool(t, "check", "config", "prometheus.yml")
}

// The alerting rules are valid, and their unit tests (rules_test.yml) pass: each alert fires where it should and
// stays silent where it should not.
func TestAlertingRules(t *testing.T) {
	t.Parallel()
	promtool(t, "check", "rules", "rules.yml")
	promtool(t, "test", "rules", "rules_test.yml")
}

// promtool runs promtool in deploy/prometheus and fails the test with its output when it fails.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(tool(t, "promtool"), args...)
	cmd.Dir = filepath.Join(root, "deploy", "prometheus")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %v: %v\n%s", args, err, out)
	}
	t.Logf("promtool %v:\n%s", args, out)
}
