package ferryctl

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/table.golden from this run's -o table output")

// testTables runs ferryctl's commands with -o table on a small, fixed world and compares the transcript with
// testdata/table.golden. OCIDs, times and receipts vary between runs: normalize replaces them with
// placeholders of the same width, so the golden file shows the columns as they are aligned.
func testTables(t *testing.T, bin string) {
	e := newEnv(t, bin)
	var transcript strings.Builder
	show := func(args ...string) {
		t.Helper()
		r := e.run("", append(args, "-o", "table")...)
		fmt.Fprintf(&transcript, "$ ferryctl %s -o table\n%s", shellWords(args), r.stdout)
		if r.code != 0 {
			fmt.Fprintf(&transcript, "(exit %d)\n%s", r.code, r.stderr)
		}
		transcript.WriteString("\n")
	}
	id := func(args ...string) string { return strings.TrimSpace(e.ok(append(args, "--query", "id")...)) }

	team := id("compartment", "create", "--name", "team", "--description", "the team's queues")
	show("compartment", "list")
	q := id("queue", "create", "--display-name", "orders", "--compartment-id", team, "--capabilities", "CONSUMER_GROUPS")
	id("queue", "create", "--display-name", "audit", "--compartment-id", team)
	show("queue", "list", "--compartment-id", team, "--sort-by", "displayName", "--sort-order", "ASC")
	show("queue", "get", q)
	id("consumer-group", "create", "--queue-id", q, "--display-name", "billing", "--filter", ":amount > 100")
	show("consumer-group", "list", "--queue-id", q, "--sort-by", "displayName", "--sort-order", "ASC")

	show("message", "put", "--queue-id", q, "--attributes", `{"amount":120}`, "first", "second\twith a tab")
	show("message", "put", "--queue-id", q, "--attributes", `{"amount":5}`, "third: "+strings.Repeat("long ", 20))
	show("message", "get", "--queue-id", q, "--consumer-group-id", "billing", "--limit", "5", "--timeout-in-seconds", "0")
	got := e.ok("message", "get", "--queue-id", q, "--limit", "2", "--timeout-in-seconds", "0", "--query", "messages[].receipt")
	receipts := strings.Fields(got)
	require.Len(t, receipts, 2)
	show("message", "update", "--queue-id", q, "--visibility-in-seconds", "0", receipts[0])
	show("message", "delete", "--queue-id", q, receipts[1], "not-a-receipt")
	e.ok("message", "put", "--queue-id", q, "--channel-id", "eu", "fourth")
	show("queue", "stats", q)
	show("queue", "channels", q)
	show("queue", "purge", q, "--purge-type", "BOTH", "--consumer-group-id", "all", "--wait")
	show("dlq", "redrive", "--queue-id", q)

	show("policy", "create", "--name", "producers", "--description", "who may put",
		"--statements", "Allow group Producers to use queue-push in compartment team")
	show("policy", "list", "--sort-by", "name", "--sort-order", "ASC")
	show("policy", "simulate", "--subject", "alice", "--groups", "Producers", "--permission", "QUEUE_PUSH", "--queue-id", q)
	show("policy", "simulate", "--subject", "bob", "--permission", "QUEUE_PUSH", "--queue-id", q)
	show("filter", "validate", "--filter", ":amount > 100", "--attributes", `{"amount":120}`, "--attributes", `{"amount":5}`)
	show("filter", "validate", "--filter", ":amount >")

	show("work-request", "list", "--compartment-id", team, "--resource-id", q)
	wrs := strings.Fields(e.ok("work-request", "list", "--compartment-id", team, "--resource-id", q, "--query", "items[].id"))
	require.Len(t, wrs, 2)
	wr := wrs[1] // newest first: the creation
	show("work-request", "logs", wr)
	show("work-request", "errors", wr)

	e.ok("config", "set-profile", "local", "--endpoint", "http://127.0.0.1:8080", "--token", "t")
	e.ok("config", "set-profile", "staging", "--endpoint", "https://ferry.example.com", "--token", "t")
	show("config", "list-profiles")

	got = normalize(transcript.String())
	path := filepath.Join("testdata", "table.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test ./tests/ferryctl -run TestFerryctl/scenario/Tables -update")
	require.Equal(t, string(want), got, "-o table changed: if that is intended, rerun with -update and review the diff")
}

// shellWords quotes the arguments as a shell would need them, so that the transcript's commands can be pasted.
func shellWords(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		switch {
		case strings.ContainsAny(a, "\t\n"):
			quoted[i] = "$" + strings.ReplaceAll(strconv.Quote(a), `"`, "'")
		case a == "" || strings.ContainsAny(a, " '\"{}>*$&;|<"):
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		default:
			quoted[i] = a
		}
	}
	return strings.Join(quoted, " ")
}
