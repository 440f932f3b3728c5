// Command dashgen writes ferry's Grafana dashboards (deploy/grafana/*.json) from Go, with Grafana's foundation
// SDK: `make generate` runs it, and `make verify` fails when the committed JSON is not what it writes.
//
//	go run ./deploy/grafana/internal/dashgen DIR
//
// Every query reads the Prometheus data source chosen in the dashboard's $datasource variable and the ferry jobs
// in $job; docs/metrics.md describes the metrics. tests/monitoring checks that each query parses, names only
// metrics a running ferry exports, and returns data from a real Prometheus scraping a real ferry.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dashgen DIR")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "dashgen:", err)
		os.Exit(1)
	}
}

// dashboards are the files dashgen writes, by name.
var dashboards = map[string]func() *dashboard.DashboardBuilder{
	"overview.json": overview,
	"queue.json":    queue,
	"iam.json":      iam,
	"database.json": database,
}

func write(dir string) error {
	for name, build := range dashboards {
		d, err := build().Build()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		// Ids in layout order: Grafana addresses panels by id (links, "view panel"), so each needs its own.
		for i, p := range d.Panels {
			id := uint32(i + 1)
			switch {
			case p.Panel != nil:
				p.Panel.Id = &id
			case p.RowPanel != nil:
				p.RowPanel.Id = id
			}
		}
		var out bytes.Buffer
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false) // PromQL's <, > and & stay readable
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), out.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// newDashboard starts a dashboard with the variables every one has: the Prometheus data source and the ferry
// jobs (a job is found by a metric only ferry exports).
func newDashboard(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"ferry"}).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
		WithVariable(queryVariable("job", "Job", `label_values(ferry_receives_waiting, job)`).
			Multi(true).IncludeAll(true).AllValue(".+").Current(all))
}

// queryVariable is a variable whose values a PromQL label_values query lists.
func queryVariable(name, label, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(datasource).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc)
}

// instanceVariable selects nodes of the chosen jobs.
func instanceVariable() *dashboard.QueryVariableBuilder {
	return queryVariable("instance", "Node", `label_values(ferry_receives_waiting{job=~"$job"}, instance)`).
		Multi(true).IncludeAll(true).AllValue(".+").Current(all)
}

// all selects every value of a variable that includes All.
var all = dashboard.VariableOption{
	Text:  dashboard.StringOrArrayOfString{String: cog.ToPtr("All")},
	Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")},
}

// datasource is the dashboards' $datasource variable.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
