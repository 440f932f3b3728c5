package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// query is one PromQL expression that operators run: an alerting rule's, a dashboard panel's, or the selector of a
// dashboard variable's label_values.
type query struct {
	where string // rules.yml FerryDown, overview.json "Requests by operation" A, …
	expr  string // with the dashboards' variables ($job, $__rate_interval, …) as written
	panel bool   // a panel's or a variable's: the end-to-end test requires data from it
}

// ruleQueries are the expressions of deploy/prometheus/rules.yml.
func ruleQueries(t *testing.T) []query {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "rules.yml"))
	require.NoError(t, err)
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(raw, &file))
	var out []query
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			out = append(out, query{where: "rules.yml " + r.Alert + r.Record, expr: r.Expr})
		}
	}
	require.NotEmpty(t, out)
	return out
}

// dashboardQueries are the targets of every panel (rows included) of deploy/grafana/*.json, and the selectors of
// their variables' label_values queries.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "deploy", "grafana", "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 4, "overview, queue, IAM, database")
	type panel struct {
		Title   string
		Targets []struct{ RefID, Expr string }
		Panels  []json.RawMessage // a row's
	}
	var out []query
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		var d struct {
			Panels     []json.RawMessage
			Templating struct {
				List []struct{ Name, Type, Query string }
			}
		}
		require.NoError(t, json.Unmarshal(raw, &d))
		name := filepath.Base(file)
		var walk func(raw []json.RawMessage)
		walk = func(raw []json.RawMessage) {
			for _, r := range raw {
				var p panel
				require.NoError(t, json.Unmarshal(r, &p))
				for _, tg := range p.Targets {
					out = append(out, query{where: name + ` "` + p.Title + `" ` + tg.RefID, expr: tg.Expr, panel: true})
				}
				walk(p.Panels)
			}
		}
		walk(d.Panels)
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			m := labelValues.FindStringSubmatch(v.Query)
			require.NotNil(t, m, "%s: variable %s: want label_values(selector, label), not %q", name, v.Name, v.Query)
			out = append(out, query{where: name + " variable " + v.Name, expr: m[1], panel: true})
		}
	}
	return out
}

// labelValues matches Grafana's label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// variable matches a Grafana variable in a query: $name or ${name}.
var variable = regexp.MustCompile(`\$\{?(\w+)\}?`)

// expand replaces the dashboards' variables with values; a variable without one fails the test.
func expand(t *testing.T, q query, values map[string]string) string {
	t.Helper()
	return variable.ReplaceAllStringFunc(q.expr, func(v string) string {
		name := variable.FindStringSubmatch(v)[1]
		value, ok := values[name]
		require.True(t, ok, "%s: unknown variable $%s", q.where, name)
		return value
	})
}

// parse parses an expanded expression as Prometheus's PromQL parser does.
func parse(expr string) (parser.Expr, error) {
	return parser.NewParser(parser.Options{}).ParseExpr(expr)
}

// metricNames are the names of the series an expression selects.
func metricNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == "__name__" {
					name = m.Value
				}
			}
			names = append(names, name)
		}
		return nil
	})
	return names
}

// placeholders stand for the dashboards' variables where only the syntax matters.
var placeholders = map[string]string{
	"__rate_interval": "5m", "__range": "1h", "job": "ferry", "instance": ".+", "tenancy": "ocid1.tenancy.x",
	"queue": "ocid1.queue.x", "datasource": "prometheus",
}

// Every expression of the rules and the dashboards parses, selects metrics by name, and uses only variables the
// dashboards define.
func TestQueriesParse(t *testing.T) {
	t.Parallel()
	queries := append(ruleQueries(t), dashboardQueries(t)...)
	require.Greater(t, len(queries), 60)
	for _, q := range queries {
		expr, err := parse(expand(t, q, placeholders))
		require.NoError(t, err, "%s: %s", q.where, q.expr)
		names := metricNames(expr)
		require.NotEmpty(t, names, "%s selects nothing", q.where)
		require.NotContains(t, names, "", "%s: a selector without a metric name", q.where)
		for _, n := range names {
			require.False(t, strings.HasPrefix(n, "ferry_messages_"), "%s: %s is gone: use the ferry_queue_* metrics", q.where, n)
		}
	}
	// The dashboards define every variable their queries use.
	files, _ := filepath.Glob(filepath.Join(root, "deploy", "grafana", "*.json"))
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		var d struct {
			Templating struct{ List []struct{ Name string } }
		}
		require.NoError(t, json.Unmarshal(raw, &d))
		defined := []string{"__rate_interval", "__range", "__all"} // Grafana's own ($__all: a variable's All)
		for _, v := range d.Templating.List {
			defined = append(defined, v.Name)
		}
		for _, m := range variable.FindAllStringSubmatch(string(raw), -1) {
			require.True(t, slices.Contains(defined, m[1]), "%s uses $%s, which it does not define", file, m[1])
		}
	}
}
