package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A real Prometheus (the Debian package's server), scraping a real ferry every second while it takes a short
// load, answers every dashboard panel's query with data, and loads and evaluates the alerting rules without
// error. The dashboards' variables are set as a user would: the job and node All, the tenancy and queue the
// load's; $__rate_interval and $__range become a minute, which covers the whole run.
func TestDashboardsWithPrometheus(t *testing.T) {
	t.Parallel()
	bin := tool(t, "prometheus")
	f := startFerry(t)
	target, err := url.Parse(f.srv.MetricsURL)
	require.NoError(t, err)
	prom := startPrometheus(t, bin, target.Host)
	prom.await(t, `up{job="ferry"} == 1`, "Prometheus scrapes ferry") // the load's counts must be seen to grow

	f.load(t, 60)
	f.awaitGauges(t)
	prom.await(t, `ferry_queue_messages_visible{queue="`+f.queueID+`"}`, "Prometheus has the sampled gauges")
	time.Sleep(2 * time.Second) // two more scrapes: every rate has samples on both sides of the load's end

	values := map[string]string{"__rate_interval": "1m", "__range": "1m", "job": "ferry", "instance": ".+",
		"tenancy": f.tenancyID, "queue": f.queueID}
	panels := 0
	for _, q := range dashboardQueries(t) {
		result := prom.query(t, expand(t, q, values))
		require.True(t, hasFinite(result), "%s returns no data: %s\n%s", q.where, result, q.expr)
		panels++
	}
	t.Logf("%d dashboard queries answered with data", panels)

	// The rules loaded, and each was evaluated without error ("unknown" until its first evaluation).
	var rules []struct{ Name, Health, LastError string }
	require.Eventually(t, func() bool {
		var answer struct {
			Data struct {
				Groups []struct {
					Rules []struct{ Name, Health, LastError string }
				}
			}
		}
		prom.get(t, "/api/v1/rules", &answer)
		rules = rules[:0]
		for _, g := range answer.Data.Groups {
			rules = append(rules, g.Rules...)
		}
		for _, r := range rules {
			if r.Health == "unknown" {
				return false
			}
		}
		return len(rules) > 0
	}, 30*time.Second, 100*time.Millisecond, "Prometheus did not evaluate the rules")
	for _, r := range rules {
		require.Equal(t, "ok", r.Health, "rule %s: %s", r.Name, r.LastError)
	}
	require.Len(t, rules, len(ruleQueries(t)), "every rule of rules.yml is loaded")
}

// prometheus is a Prometheus server of the test's.
type prometheus struct {
	base   string
	client *http.Client
}

// startPrometheus runs Prometheus on a loopback port with a data directory of the test's, scraping target every
// second and evaluating deploy/prometheus/rules.yml every second; it is stopped when the test ends.
func startPrometheus(t *testing.T, bin, target string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	rules, err := filepath.Abs(filepath.Join(root, "deploy", "prometheus", "rules.yml"))
	require.NoError(t, err)
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: ferry
    static_configs: [{targets: [%q]}]
`, rules, target)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	listen := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+listen, "--log.level=warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the test binary
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("prometheus:\n%s", logs.String())
		}
	})
	p := &prometheus{base: "http://" + listen, client: &http.Client{Timeout: 10 * time.Second}}
	require.Eventually(t, func() bool {
		resp, err := p.client.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "Prometheus did not become ready")
	return p
}

// get decodes the JSON answer of an API path.
func (p *prometheus) get(t *testing.T, path string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	require.NoError(t, err)
	resp, err := p.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
	require.NoError(t, json.Unmarshal(body, out), "%s", body)
}

// sample is one series of an instant query's answer.
type sample struct {
	Metric map[string]string
	Value  [2]any // [time, "value"]
}

// query runs an instant query now.
func (p *prometheus) query(t *testing.T, expr string) []sample {
	t.Helper()
	var answer struct {
		Status string
		Data   struct {
			ResultType string
			Result     json.RawMessage
		}
	}
	p.get(t, "/api/v1/query?query="+url.QueryEscape(expr), &answer)
	require.Equal(t, "success", answer.Status)
	switch answer.Data.ResultType {
	case "vector":
		var out []sample
		require.NoError(t, json.Unmarshal(answer.Data.Result, &out))
		return out
	case "scalar":
		var v [2]any
		require.NoError(t, json.Unmarshal(answer.Data.Result, &v))
		return []sample{{Value: v}}
	}
	t.Fatalf("%s: a %s, not an instant vector", expr, answer.Data.ResultType)
	return nil
}

// await waits until expr returns a series (Prometheus has scraped, or evaluated, what the test needs next).
func (p *prometheus) await(t *testing.T, expr, what string) {
	t.Helper()
	require.Eventually(t, func() bool { return len(p.query(t, expr)) > 0 }, 30*time.Second, 100*time.Millisecond,
		"%s: %s returned nothing", what, expr)
}

// hasFinite reports whether a series has a finite value (histogram_quantile answers NaN when nothing happened).
func hasFinite(samples []sample) bool {
	for _, s := range samples {
		text, _ := s.Value[1].(string)
		if v, err := strconv.ParseFloat(text, 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return true
		}
	}
	return false
}
