package ferryctl

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// testConfig: profiles in $XDG_CONFIG_HOME/ferry/config (else ~/.config/ferry/config), and the precedence of
// flags, --profile, the environment and the default profile.
func testConfig(t *testing.T, bin string) {
	e := newEnv(t, bin)
	delete(e.vars, "FERRY_ENDPOINT")
	delete(e.vars, "FERRY_TOKEN")
	r := e.fails(2, "queue", "list")
	require.Contains(t, r.stderr, "no token")

	e.ok("config", "set-profile", "dev", "--endpoint", e.endpoint, "--token", e.token)
	path := filepath.Join(e.vars["XDG_CONFIG_HOME"], "ferry", "config")
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the file holds tokens")
	e.ok("queue", "list") // the first profile saved is the default

	e.ok("config", "set-profile", "broken", "--endpoint", e.endpoint, "--token", "not-a-token")
	require.Contains(t, e.fails(1, "queue", "list", "--profile", "broken").stderr, "NotAuthenticated")
	e.vars["FERRY_PROFILE"] = "broken"
	e.fails(1, "queue", "list")
	delete(e.vars, "FERRY_PROFILE")

	e.ok("config", "use-profile", "broken")
	e.fails(1, "queue", "list")
	e.vars["FERRY_TOKEN"] = e.token
	e.ok("queue", "list") // the environment wins over the default profile …
	e.vars["FERRY_TOKEN"] = "not-a-token"
	e.ok("queue", "list", "--profile", "dev")                        // … an explicit --profile over the environment …
	e.ok("queue", "list", "--profile", "broken", "--token", e.token) // … and a flag over everything
	delete(e.vars, "FERRY_TOKEN")

	listed := e.ok("config", "list-profiles")
	require.NotContains(t, listed, e.token, "tokens are not listed")
	require.Equal(t, []any{
		map[string]any{"name": "broken", "endpoint": e.endpoint, "isDefault": true},
		map[string]any{"name": "dev", "endpoint": e.endpoint, "isDefault": false},
	}, decode(t, listed)["items"])

	e.ok("config", "set-profile", "broken", "--token", e.token) // updates the token, keeps the endpoint
	e.ok("queue", "list")
	e.ok("config", "delete-profile", "broken")
	e.fails(2, "queue", "list") // no default profile any more
	e.ok("config", "set-profile", "dev", "--default")
	e.ok("queue", "list")
	e.fails(2, "config", "use-profile", "nope")
	e.fails(2, "config", "delete-profile", "nope")
	e.fails(2, "queue", "list", "--profile", "nope")
	e.fails(2, "config", "set-profile")

	// Without XDG_CONFIG_HOME the file is ~/.config/ferry/config.
	delete(e.vars, "XDG_CONFIG_HOME")
	e.ok("config", "set-profile", "home", "--endpoint", e.endpoint, "--token", e.token)
	require.FileExists(t, filepath.Join(e.home, ".config", "ferry", "config"))
	e.ok("queue", "list")
}

func testExitStatuses(t *testing.T, bin string) {
	e := newEnv(t, bin)
	q := e.queue("statuses")
	missing := "ocid1.queue.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

	// 1: the API answered an error: code, message and opc-request-id on stderr, nothing on stdout.
	r := e.fails(1, "queue", "get", missing)
	require.Empty(t, r.stdout)
	apiErr := decode(t, r.stderr)
	require.Equal(t, "NotAuthorizedOrNotFound", apiErr["code"])
	require.EqualValues(t, 404, apiErr["status"])
	require.NotEmpty(t, apiErr["message"])
	require.NotEmpty(t, apiErr["opc-request-id"])
	r = e.fails(1, "queue", "get", missing, "-o", "table")
	require.Regexp(t, `^Error: NotAuthorizedOrNotFound \(404\): .+\nopc-request-id: [0-9A-F]+\n$`, r.stderr)
	require.Contains(t, e.fails(1, "queue", "create", "--display-name", "x", "--visibility-in-seconds", "999999").stderr, "InvalidParameter")
	require.Contains(t, e.fails(1, "queue", "purge", q, "--purge-type", "SOME").stderr, "InvalidParameter")
	e.vars["FERRY_TOKEN"] = "not-a-token"
	require.Contains(t, e.fails(1, "queue", "list").stderr, "NotAuthenticated")
	e.vars["FERRY_TOKEN"] = e.token
	// 1: the call failed without an answer.
	e.vars["FERRY_ENDPOINT"] = "http://127.0.0.1:1"
	require.Contains(t, e.fails(1, "queue", "list").stderr, "connection refused")
	e.vars["FERRY_ENDPOINT"] = e.endpoint

	// 2: the command line is wrong; nothing is sent.
	for _, args := range [][]string{
		{"frobnicate"},
		{"queue", "frobnicate"},
		{"queue", "get", "--no-such-flag"},
		{"queue", "get"},
		{"queue", "get", "a", "b"},
		{"queue", "get", q, "--queue-id", missing},
		{"queue", "create"},
		{"queue", "create", "--display-name", "x", "--visibility-in-seconds", "ten"},
		{"queue", "create", "--display-name", "x", "--defined-tags", "{"},
		{"queue", "list", "-o", "xml"},
		{"queue", "list", "--query", "items", "-o", "table"},
		{"message", "put", "--queue-id", q},
		{"message", "put", "--queue-id", q, "--batch-size", "21", "x"},
		{"message", "put", "--queue-id", q, "--file", filepath.Join(t.TempDir(), "missing")},
		{"message", "put", "--queue-id", q, "-", "-"},
		{"message", "delete", "--queue-id", q},
		{"message", "update", "--queue-id", q, "r"},
	} {
		r := e.fails(2, args...)
		require.Contains(t, r.stderr, "Error: ", args)
	}
	v, _ := e.queueStats(q, "queue")
	require.Zero(t, v, "the usage errors sent nothing")
}

func testOutput(t *testing.T, bin string) {
	e := newEnv(t, bin)
	q := e.queue("formats", "--freeform-tags", "team=billing")

	// JSON is the API's answer as returned: the same bytes, indented.
	out := e.ok("queue", "get", q)
	raw := e.srv.Raw(t, e.token, "GET", "/20210201/queues/"+q, "", nil)
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, []byte(out)))
	require.Equal(t, strings.TrimSpace(string(raw.Body)), compact.String())

	// YAML is the same document, in the same order.
	y := e.ok("queue", "get", q, "-o", "yaml")
	var fromYAML map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(y), &fromYAML))
	viaJSON, err := json.Marshal(fromYAML)
	require.NoError(t, err)
	require.JSONEq(t, out, string(viaJSON))
	require.True(t, strings.HasPrefix(y, "channelConsumptionLimit: 100\ncompartmentId: "), y)
	require.Contains(t, y, "freeformTags:\n  team: billing\n")
	require.Contains(t, e.ok("queue", "list", "-o", "yaml"), "items:\n  - ")

	// --query prints one field: strings as they are, the rest as JSON.
	require.Equal(t, "formats\n", e.ok("queue", "get", q, "--query", "displayName"))
	require.Equal(t, "{\"team\":\"billing\"}\n", e.ok("queue", "get", q, "--query", "freeformTags"))
	require.Equal(t, "100\n", e.ok("queue", "get", q, "--query", "channelConsumptionLimit"))
	require.Equal(t, q+"\n", e.ok("queue", "list", "--query", "items[].id"))

	require.Contains(t, e.ok("--version"), "ferryctl version")
	require.Contains(t, e.ok("queue"), "Available Commands", "a noun alone prints its verbs")
}

func testCompletion(t *testing.T, bin string) {
	e := newEnv(t, bin)
	require.Contains(t, e.ok("completion", "bash"), "__start_ferryctl")
	for _, shell := range []string{"zsh", "fish", "powershell"} {
		require.Contains(t, e.ok("completion", shell), "ferryctl", shell)
	}
	// Enums complete their values; commands their verbs.
	require.Contains(t, e.ok("__complete", "queue", "purge", "--purge-type", ""), "DLQ")
	require.Contains(t, e.ok("__complete", "policy", "simulate", "--permission", "QUEUE_P"), "QUEUE_PUSH")
	verbs := e.ok("__complete", "message", "")
	for _, verb := range []string{"put", "get", "delete", "update", "watch"} {
		require.Contains(t, verbs, verb+"\t")
	}
	e.ok("config", "set-profile", "dev", "--token", "t")
	require.Contains(t, e.ok("__complete", "--profile", ""), "dev")
}
