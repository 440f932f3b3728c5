// Package ferryctl tests the ferryctl binary as its users run it: TestFerryctl builds cmd/ferryctl (with the
// race detector when the tests have it) and runs it as a process against real ferry servers
// (tests/testserver), one per scenario. The scenarios cover every command (TestFerryctl fails when one of the
// command tree was never run), the exit statuses, stdin batching, watches stopped by SIGINT, the profiles, and
// the -o table output against testdata/table.golden (go test ./tests/ferryctl -update rewrites it).
package ferryctl

import (
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// scenario is one area of ferryctl, run with its own server.
type scenario struct {
	name string
	run  func(t *testing.T, bin string)
}

var scenarios = []scenario{
	{"Compartments", testCompartments},
	{"Queues", testQueues},
	{"ConsumerGroups", testConsumerGroups},
	{"Policies", testPolicies},
	{"WorkRequests", testWorkRequests},
	{"Filter", testFilter},
	{"Messages", testMessages},
	{"PutBatching", testPutBatching},
	{"DeadLetters", testDeadLetters},
	{"Consumers", testConsumers},
	{"Watch", testWatch},
	{"WatchInterrupted", testWatchInterrupted},
	{"Config", testConfig},
	{"ExitStatuses", testExitStatuses},
	{"Output", testOutput},
	{"Completion", testCompletion},
	{"Tables", testTables},
}

// TestFerryctl builds ferryctl once, runs the scenarios in parallel, and then checks that every command of the
// tree ran at least once (when every scenario ran).
func TestFerryctl(t *testing.T) {
	bin := build(t)
	var ran atomic.Int64
	t.Run("scenario", func(t *testing.T) {
		for _, s := range scenarios {
			t.Run(s.name, func(t *testing.T) {
				t.Parallel()
				ran.Add(1)
				s.run(t, bin)
			})
		}
	})
	if int(ran.Load()) == len(scenarios) && !t.Failed() {
		leaves := leafCommands(t, bin)
		for _, path := range leaves {
			if !invoked(path) {
				t.Errorf("no scenario runs ferryctl %s", path)
			}
		}
		invocations.Lock()
		t.Logf("%d runs of ferryctl in %d scenarios cover the %d commands", len(invocations.args), len(scenarios), len(leaves))
		invocations.Unlock()
	}
}

// build compiles cmd/ferryctl into the test's temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ferryctl")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "github.com/ferry-mq/ferry/cmd/ferryctl")...).CombinedOutput()
	if err != nil {
		t.Fatalf("building ferryctl: %v\n%s", err, out)
	}
	return bin
}
