package ferryctl

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func names(t *testing.T, doc map[string]any, field string) []string {
	t.Helper()
	var out []string
	for _, it := range items(t, doc) {
		out = append(out, it[field].(string))
	}
	return out
}

func testCompartments(t *testing.T, bin string) {
	e := newEnv(t, bin)
	team := e.json("compartment", "create", "--name", "team", "--description", "the team")
	require.Equal(t, e.tenancy, team["compartmentId"], "the default parent is the root compartment")
	id := team["id"].(string)
	child := e.json("compartment", "create", "--name", "child", "--compartment-id", id, "--freeform-tags", "env=dev")
	require.Equal(t, id, child["compartmentId"])
	require.Equal(t, map[string]any{"env": "dev"}, child["freeformTags"])

	require.Equal(t, "team", e.json("compartment", "get", id)["name"])
	require.Equal(t, "team", e.json("compartment", "get", "--compartment-id", id)["name"], "the id as a flag")
	require.Equal(t, []string{"team"}, names(t, e.json("compartment", "list"), "name"))
	require.ElementsMatch(t, []string{"team", "child"}, names(t, e.json("compartment", "list", "--compartment-id-in-subtree"), "name"))
	require.Equal(t, []string{"child"}, names(t, e.json("compartment", "list", "--compartment-id", id, "--name", "child"), "name"))

	updated := e.json("compartment", "update", id, "--description", "renamed", "--name", "squad")
	require.Equal(t, "renamed", updated["description"])
	require.Equal(t, "squad", updated["name"])

	r := e.fails(1, "compartment", "delete", id)
	require.Contains(t, r.stderr, `"code": "IncorrectState"`, "a compartment that holds another cannot be deleted")
	require.Empty(t, e.ok("compartment", "delete", child["id"].(string)), "a 204 prints nothing")
	e.ok("compartment", "delete", id)
	require.Equal(t, "DELETED", e.json("compartment", "get", id)["lifecycleState"])
	require.Empty(t, items(t, e.json("compartment", "list", "--lifecycle-state", "ACTIVE")))
}

func testQueues(t *testing.T, bin string) {
	e := newEnv(t, bin)
	q := e.json("queue", "create", "--display-name", "orders", "--visibility-in-seconds", "45",
		"--dead-letter-queue-delivery-count", "3", "--retention-in-seconds", "3600", "--freeform-tags", "team=billing", "--wait")
	id := q["id"].(string)
	require.Equal(t, e.tenancy, q["compartmentId"])
	require.EqualValues(t, 45, q["visibilityInSeconds"])
	require.EqualValues(t, 3600, q["retentionInSeconds"])
	require.EqualValues(t, 30, q["timeoutInSeconds"], "a flag left out leaves the server's default")
	e.queue("second")
	e.queue("third")

	require.Equal(t, "orders", e.json("queue", "get", id)["displayName"])
	require.Equal(t, "orders", e.json("queue", "get", "--queue-id", id)["displayName"])
	require.Len(t, items(t, e.json("queue", "list")), 3)
	require.Equal(t, []string{"orders"}, names(t, e.json("queue", "list", "--display-name", "orders"), "displayName"))
	require.Equal(t, []string{"orders"}, names(t, e.json("queue", "list", "--id", id), "displayName"))
	require.Equal(t, []string{"orders", "second", "third"},
		names(t, e.json("queue", "list", "--limit", "1", "--all", "--sort-by", "displayName", "--sort-order", "ASC"), "displayName"),
		"--all follows the pages")

	// One page: the next page's token is on stderr, and --page fetches it.
	first := e.run("", "queue", "list", "--limit", "1", "--sort-by", "displayName", "--sort-order", "ASC")
	require.Equal(t, 0, first.code, first.stderr)
	require.Equal(t, []string{"orders"}, names(t, decode(t, first.stdout), "displayName"))
	next := regexp.MustCompile(`opc-next-page: (\S+)`).FindStringSubmatch(first.stderr)
	require.NotNil(t, next, first.stderr)
	require.Equal(t, []string{"second"}, names(t, e.json("queue", "list", "--limit", "1", "--sort-by", "displayName",
		"--sort-order", "ASC", "--page", next[1]), "displayName"))

	updated := e.json("queue", "update", id, "--visibility-in-seconds", "60", "--capabilities", "consumer_groups", "--wait")
	require.EqualValues(t, 60, updated["visibilityInSeconds"])
	require.EqualValues(t, 3, updated["deadLetterQueueDeliveryCount"], "an update changes only the fields given")
	require.Equal(t, "CONSUMER_GROUPS", updated["capabilities"].([]any)[0].(map[string]any)["type"])
	updated = e.json("queue", "update", id, "--capabilities", `[{"type":"CONSUMER_GROUPS","primaryConsumerGroupDisplayName":"main"}]`)
	require.Equal(t, "main", updated["capabilities"].([]any)[0].(map[string]any)["primaryConsumerGroupDisplayName"])

	moved := e.ok("compartment", "create", "--name", "elsewhere", "--query", "id")
	require.Equal(t, strings.TrimSpace(moved), e.json("queue", "move", id, "--compartment-id", strings.TrimSpace(moved), "--wait")["compartmentId"])

	e.ok("message", "put", "--queue-id", id, "a", "b")
	e.ok("message", "put", "--queue-id", id, "--channel-id", "eu", "c")
	stats := e.json("queue", "stats", id)
	require.EqualValues(t, 3, stats["queue"].(map[string]any)["visibleMessages"])
	eu := e.json("queue", "stats", id, "--channel-id", "eu")
	require.EqualValues(t, 1, eu["queue"].(map[string]any)["visibleMessages"])
	require.Equal(t, []any{"eu"}, e.json("queue", "channels", id)["items"], "the default channel is never listed")
	require.Equal(t, []any{"eu"}, e.json("queue", "channels", id, "--channel-filter", "e*")["items"])
	require.Contains(t, e.json("queue", "consumers", id), "items")

	purged := e.json("queue", "purge", id, "--purge-type", "NORMAL", "--wait")
	require.Equal(t, "PURGE_QUEUE", purged["operationType"])
	require.Equal(t, "SUCCEEDED", purged["status"])
	require.EqualValues(t, 0, e.json("queue", "stats", id)["queue"].(map[string]any)["visibleMessages"])
	// Without --wait a purge prints its work request as it is when accepted.
	require.Equal(t, "PURGE_QUEUE", e.json("queue", "purge", id, "--purge-type", "DLQ", "--channel-ids", "eu")["operationType"])

	deleted := e.json("queue", "delete", id, "--wait")
	require.Equal(t, "DELETE_QUEUE", deleted["operationType"])
	require.Equal(t, "SUCCEEDED", deleted["status"])
	require.Equal(t, "DELETE_QUEUE", e.json("queue", "delete", "--queue-id", e.queue("fourth"))["operationType"])
}

func testConsumerGroups(t *testing.T, bin string) {
	e := newEnv(t, bin)
	q := e.queue("fanout", "--capabilities", "CONSUMER_GROUPS")
	g := e.json("consumer-group", "create", "--queue-id", q, "--display-name", "billing", "--filter", `:team = "billing"`, "--wait")
	id := g["id"].(string)
	require.Equal(t, `:team = "billing"`, g["filter"])
	require.Equal(t, "billing", e.json("consumer-group", "get", id)["displayName"])
	require.Equal(t, []string{"billing", "primary"}, names(t, e.json("consumer-group", "list", "--queue-id", q,
		"--sort-by", "displayName", "--sort-order", "ASC"), "displayName"))
	require.Equal(t, []string{"billing"}, names(t, e.json("consumer-group", "list", "--queue-id", q, "--display-name", "billing"), "displayName"))

	updated := e.json("consumer-group", "update", id, "--filter", ":amount > 100", "--dead-letter-queue-delivery-count", "2", "--wait")
	require.Equal(t, ":amount > 100", updated["filter"])
	require.EqualValues(t, 2, updated["deadLetterQueueDeliveryCount"])
	require.Equal(t, true, updated["isEnabled"], "an update changes only the fields given")

	put := e.json("message", "put", "--queue-id", q, "--attributes", `{"amount":120}`, "big")
	require.EqualValues(t, 2, put["messages"].([]any)[0].(map[string]any)["consumerGroups"])
	put = e.json("message", "put", "--queue-id", q, "--attributes", `{"amount":5}`, "small")
	require.EqualValues(t, 1, put["messages"].([]any)[0].(map[string]any)["consumerGroups"])
	got := e.json("message", "get", "--queue-id", q, "--consumer-group-id", "billing", "--limit", "10", "--timeout-in-seconds", "0")
	require.Len(t, got["messages"], 1)

	disabled := e.json("consumer-group", "update", id, "--is-enabled=false")
	require.Equal(t, false, disabled["isEnabled"])

	r := e.fails(1, "consumer-group", "delete", q)
	require.Contains(t, r.stderr, "IncorrectState", "the primary group cannot be deleted")
	deleted := e.json("consumer-group", "delete", id, "--wait")
	require.Equal(t, "DELETE_CONSUMER_GROUP", deleted["operationType"])
	require.Equal(t, "SUCCEEDED", deleted["status"])
}

func testPolicies(t *testing.T, bin string) {
	e := newEnv(t, bin)
	p := e.json("policy", "create", "--name", "producers", "--description", "who may put",
		"--statements", "Allow group Producers to use queue-push in tenancy",
		"--statements", "Allow group Producers, group Auditors to read queues in tenancy")
	id := p["id"].(string)
	require.Len(t, p["statements"], 2, "a statement with commas stays one statement")
	require.Equal(t, e.tenancy, p["compartmentId"])
	require.Equal(t, "producers", e.json("policy", "get", id)["name"])
	require.Equal(t, []string{"producers"}, names(t, e.json("policy", "list", "--name", "producers"), "name"))
	require.Len(t, items(t, e.json("policy", "list", "--all", "--limit", "1")), 2, "with Tenant Admin Policy")

	updated := e.json("policy", "update", id, "--statements", "Allow group Producers to use queue-push in tenancy")
	require.Len(t, updated["statements"], 1)
	require.Equal(t, "who may put", updated["description"])

	allowed := e.json("policy", "simulate", "--subject", "alice", "--groups", "Producers", "--permission", "QUEUE_PUSH")
	require.Equal(t, true, allowed["allowed"])
	require.Equal(t, id, allowed["matchedStatements"].([]any)[0].(map[string]any)["policyId"])
	denied := e.json("policy", "simulate", "--subject", "alice", "--groups", "Producers", "--permission", "QUEUE_PULL")
	require.Equal(t, false, denied["allowed"])
	q := e.queue("in")
	require.Equal(t, true, e.json("policy", "simulate", "--subject", "alice", "--groups", "Producers", "--permission", "QUEUE_PUSH", "--queue-id", q)["allowed"])
	e.fails(2, "policy", "simulate", "--subject", "alice", "--permission", "QUEUE_PUSH", "--queue-id", q, "--compartment-id", e.tenancy)

	r := e.fails(1, "policy", "create", "--name", "bad", "--statements", "Allow nobody")
	require.Contains(t, r.stderr, `"code": "InvalidParameter"`)

	require.Empty(t, e.ok("policy", "delete", id))
	require.Equal(t, "DELETED", e.json("policy", "get", id)["lifecycleState"])
}

func testWorkRequests(t *testing.T, bin string) {
	e := newEnv(t, bin)
	q := e.queue("tracked")
	list := items(t, e.json("work-request", "list", "--resource-id", q))
	require.Len(t, list, 1)
	require.Equal(t, "CREATE_QUEUE", list[0]["operationType"])
	id := list[0]["id"].(string)
	require.Equal(t, "SUCCEEDED", e.json("work-request", "get", id)["status"])
	require.Empty(t, items(t, e.json("work-request", "errors", id)))
	require.NotEmpty(t, items(t, e.json("work-request", "logs", id)))
	require.Len(t, items(t, e.json("work-request", "list", "--work-request-id", id)), 1)

	e.ok("queue", "update", q, "--display-name", "renamed")
	require.Len(t, items(t, e.json("work-request", "list", "--all", "--limit", "1")), 2)
	require.Len(t, items(t, e.json("work-request", "list", "--compartment-id", e.tenancy)), 2)
}

func testFilter(t *testing.T, bin string) {
	e := newEnv(t, bin)
	v := e.json("filter", "validate", "--filter", ":amount > 100", "--attributes", `{"amount":120}`, "--attributes", `{"amount":5}`)
	require.Equal(t, true, v["valid"])
	require.Equal(t, []any{true, false}, v["matches"])
	bad := e.json("filter", "validate", "--filter", ":amount >")
	require.Equal(t, false, bad["valid"], "an invalid filter is an answer, not an error")
	require.Contains(t, bad["error"], "column 10")
	e.fails(2, "filter", "validate", "--filter", ":a", "--attributes", "not json")
}
