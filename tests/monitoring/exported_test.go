package monitoring

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// What a ferry under load exports is what the rules, the dashboards and docs/metrics.md say: every metric their
// queries select exists, every exported metric is documented and every documented one exported, and every label
// is one of the documented, bounded ones.
func TestExportedMetrics(t *testing.T) {
	t.Parallel()
	f := startFerry(t)
	f.load(t, 40)
	exported := exportedNames(t, f.awaitGauges(t))

	t.Run("queries select exported metrics", func(t *testing.T) {
		for _, q := range append(ruleQueries(t), dashboardQueries(t)...) {
			expr, err := parse(expand(t, q, placeholders))
			require.NoError(t, err, q.where)
			for _, name := range metricNames(expr) {
				_, ok := exported.series[name]
				require.True(t, ok || name == "up", "%s selects %s, which ferry does not export", q.where, name)
			}
		}
	})

	t.Run("docs/metrics.md lists what is exported", func(t *testing.T) {
		documented := documentedMetrics(t)
		for family := range exported.families {
			if strings.HasPrefix(family, "go_") || strings.HasPrefix(family, "process_") || family == "target_info" {
				continue // the Go and process collectors', described as such
			}
			require.True(t, documented[family], "%s is exported but not in docs/metrics.md's tables", family)
		}
		for name := range documented {
			_, ok := exported.families[name]
			require.True(t, ok, "docs/metrics.md lists %s, which ferry does not export", name)
		}
	})

	t.Run("labels are the documented, bounded ones", func(t *testing.T) {
		bounded := map[string]bool{"http_route": true, "http_request_method": true, "http_response_status_code": true,
			"operation": true, "db_query_summary": true, "db_system_name": true, "db_client_connection_state": true, "db_collection_name": true,
			"permission": true, "result": true, "origin": true, "tenancy": true, "queue": true, "consumer_group": true}
		for family, mf := range exported.families {
			if strings.HasPrefix(family, "go_") || strings.HasPrefix(family, "process_") || family == "target_info" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					require.True(t, bounded[l.GetName()], "%s has label %s, which docs/metrics.md does not bound", family, l.GetName())
				}
			}
		}
	})
}

// exported is a scrape: the metric families, and the names of the series they expose (a histogram's _bucket,
// _sum and _count).
type exported struct {
	families map[string]*dto.MetricFamily
	series   map[string]bool
}

func exportedNames(t *testing.T, page string) exported {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(page))
	require.NoError(t, err)
	out := exported{families: families, series: map[string]bool{}}
	for name, mf := range families {
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			out.series[name+"_bucket"], out.series[name+"_sum"], out.series[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out.series[name], out.series[name+"_sum"], out.series[name+"_count"] = true, true, true
		default:
			out.series[name] = true
		}
	}
	return out
}

// documentedMetrics are the names in the first column of docs/metrics.md's tables of metrics (the section "The
// metrics").
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	require.NoError(t, err)
	doc := string(raw)
	start, end := strings.Index(doc, "\n## The metrics"), strings.Index(doc, "\n## Labels and their bounds")
	require.True(t, start >= 0 && end > start, "docs/metrics.md has the sections \"The metrics\" and \"Labels and their bounds\"")
	out := map[string]bool{}
	for _, m := range tableRow.FindAllStringSubmatch(doc[start:end], -1) {
		out[m[1]] = true
	}
	require.Greater(t, len(out), 25)
	return out
}

// tableRow matches a table row whose first cell is one metric name.
var tableRow = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|")
