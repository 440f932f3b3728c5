package ferryctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// env is a ferry server with a tenancy, and the environment ferryctl runs in: its endpoint and the tenancy
// administrator's token in FERRY_ENDPOINT and FERRY_TOKEN, and a private configuration directory.
type env struct {
	t        *testing.T
	bin      string
	srv      *testserver.Server
	tenancy  string
	token    string
	admin    *e2e.Client // the SDK, to check what ferryctl did
	home     string      // HOME and XDG_CONFIG_HOME's parent
	vars     map[string]string
	endpoint string
}

func newEnv(t *testing.T, bin string) *env {
	t.Helper()
	srv, tenancyID, admin := testserver.StartAdmin(t)
	return newEnvOf(t, bin, srv, tenancyID, admin)
}

func newEnvOf(t *testing.T, bin string, srv *testserver.Server, tenancyID string, admin *e2e.Client) *env {
	t.Helper()
	home := t.TempDir()
	e := &env{t: t, bin: bin, srv: srv, tenancy: tenancyID, token: srv.AdminToken(t, tenancyID), admin: admin, home: home, endpoint: srv.URL}
	e.vars = map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, "xdg"),
		"FERRY_ENDPOINT":  srv.URL,
		"FERRY_TOKEN":     e.token,
	}
	return e
}

// result is what a ferryctl run printed and its exit status.
type result struct {
	stdout, stderr string
	code           int
}

// command builds a ferryctl process with the env's variables and nothing else of the test's environment (so
// that a FERRY_* variable of the developer's shell changes nothing).
func (e *env) command(args ...string) *exec.Cmd {
	record(args)
	cmd := exec.Command(e.bin, args...)
	// A race-built ferryctl would sleep a second at exit (the race runtime's default), and a race it finds
	// fails the run (exit status 66).
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GORACE=atexit_sleep_ms=0 halt_on_error=1"}
	for k, v := range e.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// run runs ferryctl with stdin and returns what it printed and its exit status.
func (e *env) run(stdin string, args ...string) result {
	e.t.Helper()
	cmd := e.command(args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		e.t.Fatalf("running ferryctl %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// ok runs ferryctl, requires exit status 0, and returns its stdout.
func (e *env) ok(args ...string) string {
	e.t.Helper()
	return e.okIn("", args...)
}

func (e *env) okIn(stdin string, args ...string) string {
	e.t.Helper()
	r := e.run(stdin, args...)
	require.Equalf(e.t, 0, r.code, "ferryctl %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
	return r.stdout
}

// fails runs ferryctl and requires the exit status code; it returns the result.
func (e *env) fails(code int, args ...string) result {
	e.t.Helper()
	r := e.run("", args...)
	require.Equalf(e.t, code, r.code, "ferryctl %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
	return r
}

// json runs ferryctl (exit 0) and decodes its JSON output into a generic document.
func (e *env) json(args ...string) map[string]any {
	e.t.Helper()
	return decode(e.t, e.ok(args...))
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoErrorf(t, json.Unmarshal([]byte(s), &m), "not a JSON object: %s", s)
	return m
}

// items is a list answer's items.
func items(t *testing.T, doc map[string]any) []map[string]any {
	t.Helper()
	list, ok := doc["items"].([]any)
	require.Truef(t, ok, "no items in %v", doc)
	out := make([]map[string]any, len(list))
	for i, v := range list {
		out[i], _ = v.(map[string]any)
	}
	return out
}

// queue creates a queue with ferryctl and returns its OCID.
func (e *env) queue(name string, flags ...string) string {
	e.t.Helper()
	return strings.TrimSpace(e.ok(append([]string{"queue", "create", "--display-name", name, "--query", "id"}, flags...)...))
}

// The commands the scenarios ran, to check that every command of the tree ran.
var invocations struct {
	sync.Mutex
	args [][]string
}

func record(args []string) {
	invocations.Lock()
	defer invocations.Unlock()
	invocations.args = append(invocations.args, slices.Clone(args))
}

// invoked reports whether some run's arguments started with the command path.
func invoked(path string) bool {
	words := strings.Fields(path)
	invocations.Lock()
	defer invocations.Unlock()
	for _, args := range invocations.args {
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return true
		}
	}
	return false
}

// leafCommands walks ferryctl's command tree through cobra's completion command (__complete), which lists a
// command's subcommands: the commands that list none are the leaves.
func leafCommands(t *testing.T, bin string) []string {
	t.Helper()
	home := t.TempDir() // no profiles: use-profile and delete-profile complete nothing
	var walk func(path []string) []string
	walk = func(path []string) []string {
		cmd := exec.Command(bin, append(append([]string{"__complete"}, path...), "")...)
		cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "GORACE=atexit_sleep_ms=0"}
		out, err := cmd.Output()
		require.NoError(t, err)
		var subs []string
		for _, line := range strings.Split(string(out), "\n") {
			name, _, _ := strings.Cut(line, "\t")
			if name == "" || strings.HasPrefix(name, ":") || strings.HasPrefix(name, "-") || name == "help" {
				continue
			}
			subs = append(subs, name)
		}
		if len(subs) == 0 {
			return []string{strings.Join(path, " ")}
		}
		var leaves []string
		for _, s := range subs {
			leaves = append(leaves, walk(append(slices.Clone(path), s))...)
		}
		return leaves
	}
	leaves := walk(nil)
	require.Greater(t, len(leaves), 40, "the command tree: %v", leaves)
	return leaves
}

// normalize replaces what varies between runs in table output with placeholders of the same width, so that the
// columns of the golden file stay aligned: OCIDs (numbered in order of appearance), times, receipts (always
// the last column) and request ids.
func normalize(s string) string {
	s = requestIDRE.ReplaceAllString(s, strings.Repeat("0", 32)) // first: an OCID placeholder is 32 digits too
	seen := map[string]string{}
	s = ocidRE.ReplaceAllStringFunc(s, func(ocid string) string {
		if n, ok := seen[ocid]; ok {
			return n
		}
		m := ocidRE.FindStringSubmatch(ocid)
		n := fmt.Sprintf("ocid1.%s.ferry.local.%032d", m[1], len(seen)+1)
		seen[ocid] = n
		return n
	})
	s = timeRE.ReplaceAllString(s, "2000-01-01T00:00:00Z")
	return receiptRE.ReplaceAllString(s, "<receipt>")
}

var (
	ocidRE    = regexp.MustCompile(`ocid1\.([a-z]+)\.ferry\.local\.[a-z2-7]{32}`)
	timeRE    = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z`)
	receiptRE = regexp.MustCompile(`\bAQ[A-Za-z0-9_-]{30,}`)
	// opc-request-id of an error on stderr
	requestIDRE = regexp.MustCompile(`\b[0-9A-F]{32}\b`)
)
