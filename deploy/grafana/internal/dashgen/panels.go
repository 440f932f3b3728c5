package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Label matchers the queries share: the chosen jobs, and the chosen nodes of them.
const (
	jobs  = `job=~"$job"`
	nodes = `job=~"$job", instance=~"$instance"`
)

// query is one PromQL query of a panel and the legend of its series.
type query struct {
	expr, legend string
}

func q(expr, legend string) query { return query{expr: expr, legend: legend} }

// targets turns queries into the panel's targets, A, B, C…
func targets(queries []query) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], len(queries))
	for i, qu := range queries {
		out[i] = prometheus.NewDataqueryBuilder().
			Datasource(datasource).
			RefId(string(rune('A' + i))).
			Expr(qu.expr).
			LegendFormat(qu.legend)
	}
	return out
}

// graph is a time series panel, a third of the width.
func graph(title, description, unit string, queries ...query) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource).
		Unit(unit).
		Min(0).
		Height(8).
		Span(8).
		FillOpacity(10).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Targets(targets(queries))
}

// number is a stat panel of one current value, a sixth of the width.
func number(title, description, unit string, queries ...query) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource).
		Unit(unit).
		Height(4).
		Span(4).
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeNone).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Targets(targets(queries))
}

func row(title string) *dashboard.RowBuilder { return dashboard.NewRowBuilder(title) }
