// Package monitoring tests what operators deploy beside ferry (deploy/): the Prometheus configuration and its
// alerting rules with promtool, and the queries of the rules and of the Grafana dashboards against what a real
// ferry exports under load, and against a real Prometheus scraping it. docs/metrics.md is checked against the
// same export.
//
// promtool and prometheus come from Debian's package (make tools installs it). Without them those tests skip,
// unless FERRY_REQUIRE_TOOLS=1 (set by .ci/run), which makes their absence a failure.
package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// root is the repository's root (tests run in their package's directory).
var root = filepath.Join("..", "..")

// tool is the path of a binary the test needs. Missing, the test skips — or fails when FERRY_REQUIRE_TOOLS=1.
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("FERRY_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s is not installed (FERRY_REQUIRE_TOOLS=1): make tools installs it", name)
	}
	t.Skipf("%s is not installed: make tools installs it (Debian package prometheus)", name)
	return ""
}
