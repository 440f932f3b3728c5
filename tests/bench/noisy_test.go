package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/tests/noisy"
)

// BenchmarkNoisyNeighbour is the full noisy-neighbour run (docs/limits.md) against the ferry binary: a quiet
// tenancy measures put→get alone and then while a noisy tenancy, whose quotas are set with `ferry quota set`, floods
// 2 MB puts and long polls; it also reads ferry's RSS before, during and after the flood. It prints a
// NOISY_NEIGHBOUR line and a NOISY_RSS line.
func BenchmarkNoisyNeighbour(b *testing.B) {
	n := startNode(b)
	ctx := context.Background()
	noisyID := n.cli(b, "tenancy", "create", "--name", "noisy")["id"].(string)
	for name, v := range map[string]string{"requests-per-second": "200", "bytes-per-second": "2000000", "long-polls": "50"} {
		n.cli(b, "quota", "set", "--tenancy", noisyID, "--name", name, "--value", v)
	}
	quota := n.cliList(b, "quota", "list", "--tenancy", noisyID)
	b.Logf("noisy tenancy's quotas: %v", quota)
	noisyToken, err := iam.IssueHS256([]byte(n.secret()), noisyID, "noisy", []string{"Administrators"}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	noisyNode := &node{base: n.base, token: noisyToken, tenancy: noisyID, client: n.client}
	quietQueue, noisyQueue := n.createQueue(b, "quiet"), noisyNode.createQueue(b, "noisy")
	time.Sleep(3 * time.Second) // the quota change reaches the node (FERRY_LIMITS_REFRESH, 2 s)

	before, _ := n.rssKiB()
	var mu sync.Mutex
	var peakDuring int64
	sample := func(until time.Duration) {
		for start := time.Now(); time.Since(start) < until; time.Sleep(200 * time.Millisecond) {
			rss, _ := n.rssKiB()
			mu.Lock()
			peakDuring = max(peakDuring, rss)
			mu.Unlock()
		}
	}
	const phase = 15 * time.Second
	r := noisy.Run(ctx, noisy.Config{
		Quiet:      noisy.Tenant{BaseURL: n.base, Token: n.token, QueueID: quietQueue},
		Noisy:      noisy.Tenant{BaseURL: n.base, Token: noisyToken, QueueID: noisyQueue},
		Client:     &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}},
		Phase:      phase,
		QuietRate:  100,
		Flooders:   16,
		FloodBytes: 250_000, // 8 of them: 2 MB puts
		FloodBatch: 8,
		LongPolls:  300,
		Backoff:    100 * time.Millisecond,
		RetryAfter: true, // as the SDKs do: a client that ignores 429s is a denial of service for the network's defences
		During:     func() { sample(phase) },
	})
	fmt.Println(r.Line())
	// After the burst: RSS as it settles (the Go runtime returns freed memory to the OS in the background).
	var after5, after30 int64
	for i := 1; i <= 30; i++ {
		time.Sleep(time.Second)
		rss, _ := n.rssKiB()
		if i == 5 {
			after5 = rss
		}
		after30 = rss
	}
	_, hwm := n.rssKiB()
	fmt.Printf("NOISY_RSS before_mib=%d peak_during_mib=%d after_5s_mib=%d after_30s_mib=%d process_peak_mib=%d\n",
		before/1024, peakDuring/1024, after5/1024, after30/1024, hwm/1024)
	if r.NoisyThrottled == 0 || r.NoisyOther > 0 || r.QuietErrors > 0 {
		b.Errorf("the noisy tenancy must be throttled (429: %d), never failed (%d), and the quiet one served (errors: %d)",
			r.NoisyThrottled, r.NoisyOther, r.QuietErrors)
	}
}

// cli runs a ferry admin command with the node's environment and decodes its JSON object.
func (n *node) cli(b testing.TB, args ...string) map[string]any {
	b.Helper()
	var out map[string]any
	n.cliJSON(b, &out, args...)
	return out
}

// cliList runs a ferry admin command that prints a JSON array.
func (n *node) cliList(b testing.TB, args ...string) []map[string]any {
	b.Helper()
	var out []map[string]any
	n.cliJSON(b, &out, args...)
	return out
}

func (n *node) cliJSON(b testing.TB, out any, args ...string) {
	b.Helper()
	cmd := exec.Command(n.bin, args...)
	cmd.Env = n.env
	raw, err := cmd.Output()
	if err != nil {
		b.Fatalf("ferry %s: %v", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.Fatalf("ferry %s: %v: %s", strings.Join(args, " "), err, raw)
	}
}

// secret is the node's HS256 secret (from its environment).
func (n *node) secret() string {
	for _, kv := range n.env {
		if v, ok := strings.CutPrefix(kv, "FERRY_JWT_HS256_SECRET="); ok {
			return v
		}
	}
	return ""
}
