// Package noisy is the noisy-neighbour scenario (docs/limits.md), shared by its short form in make test
// (tests/noisy_neighbour_test.go, an in-process server) and its full form in make bench (tests/bench, the ferry
// binary): a quiet tenancy measures its put→get latency alone, then again while a noisy tenancy floods puts and
// long polls on the same node. The noisy tenancy must be throttled (429) rather than slow the quiet one down.
package noisy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Tenant is one tenancy's access to a queue.
type Tenant struct {
	BaseURL string
	Token   string
	QueueID string
}

// Config shapes a run.
type Config struct {
	Quiet, Noisy Tenant
	Client       *http.Client
	Phase        time.Duration // how long each phase measures
	QuietRate    int           // the quiet tenancy's puts per second
	Flooders     int           // the noisy tenancy's concurrent producers
	FloodBytes   int           // bytes per noisy message
	FloodBatch   int           // messages per noisy put (default 1)
	LongPolls    int           // the noisy tenancy's concurrent long polls
	// Backoff is how long a noisy client waits after a 429 before it tries again; with RetryAfter it waits what
	// the answer's Retry-After says instead (as the SDKs do).
	Backoff    time.Duration
	RetryAfter bool
	// During, when set, runs in its own goroutine once the flood is at its pace (e.g. to sample memory).
	During func()
}

// Result is what a run measured.
type Result struct {
	SoloP50, SoloP99   time.Duration // the quiet tenancy alone
	NoisyP50, NoisyP99 time.Duration // the quiet tenancy beside the noisy one
	SoloSamples        int
	NoisySamples       int
	NoisyPuts          int64 // the noisy tenancy's puts answered 200
	NoisyThrottled     int64 // its calls answered 429
	NoisyOther         int64 // its calls answered anything else (5xx: the node was hurt)
	QuietErrors        int64 // the quiet tenancy's calls that did not succeed
}

// Ratio is the quiet tenancy's p99 beside the noisy one over its solo p99.
func (r Result) Ratio() float64 {
	return float64(r.NoisyP99) / float64(max(r.SoloP99, time.Microsecond))
}

// Line is the machine-readable summary.
func (r Result) Line() string {
	return fmt.Sprintf("NOISY_NEIGHBOUR solo_p50_ms=%.2f solo_p99_ms=%.2f noisy_p50_ms=%.2f noisy_p99_ms=%.2f p99_ratio=%.2f "+
		"quiet_samples=%d/%d noisy_puts=%d noisy_429=%d noisy_other=%d quiet_errors=%d",
		ms(r.SoloP50), ms(r.SoloP99), ms(r.NoisyP50), ms(r.NoisyP99), r.Ratio(), r.SoloSamples, r.NoisySamples,
		r.NoisyPuts, r.NoisyThrottled, r.NoisyOther, r.QuietErrors)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Run measures the quiet tenancy alone, then beside the flood.
func Run(ctx context.Context, cfg Config) Result {
	var r Result
	var solo, noisy []time.Duration
	var quietErrors atomic.Int64
	solo = measure(ctx, cfg, &quietErrors)
	floodCtx, stopFlood := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var puts, throttled, other atomic.Int64
	count := func(status int) {
		switch {
		case status == http.StatusOK:
		case status == http.StatusTooManyRequests:
			throttled.Add(1)
		default:
			other.Add(1)
		}
	}
	entry := `{"content":"` + strings.Repeat("n", cfg.FloodBytes) + `"}`
	body := []byte(`{"messages":[` + strings.Repeat(entry+",", max(cfg.FloodBatch, 1)-1) + entry + `]}`)
	for range cfg.Flooders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for floodCtx.Err() == nil {
				status, _, retry := call(floodCtx, cfg.Client, cfg.Noisy, "POST", "/messages", body)
				if floodCtx.Err() != nil {
					return
				}
				count(status)
				if status == http.StatusOK {
					puts.Add(1)
				} else {
					sleep(floodCtx, cfg.wait(retry))
				}
			}
		}()
	}
	for range cfg.LongPolls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for floodCtx.Err() == nil {
				status, _, retry := call(floodCtx, cfg.Client, cfg.Noisy, "GET", "/messages?timeoutInSeconds=5&limit=20&visibilityInSeconds=1", nil)
				if floodCtx.Err() != nil {
					return
				}
				count(status)
				if status != http.StatusOK {
					sleep(floodCtx, cfg.wait(retry))
				}
			}
		}()
	}
	sleep(ctx, time.Second) // the flood reaches its pace
	if cfg.During != nil {
		go cfg.During()
	}
	noisy = measure(ctx, cfg, &quietErrors)
	stopFlood()
	wg.Wait()
	r.SoloP50, r.SoloP99, r.SoloSamples = percentile(solo, 0.50), percentile(solo, 0.99), len(solo)
	r.NoisyP50, r.NoisyP99, r.NoisySamples = percentile(noisy, 0.50), percentile(noisy, 0.99), len(noisy)
	r.NoisyPuts, r.NoisyThrottled, r.NoisyOther, r.QuietErrors = puts.Load(), throttled.Load(), other.Load(), quietErrors.Load()
	return r
}

// measure puts QuietRate messages a second for Phase, each carrying its send time, while one consumer long-polls
// and deletes them; it returns each message's put→get latency.
func measure(ctx context.Context, cfg Config, errs *atomic.Int64) []time.Duration {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	start := time.Now()
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for ctx.Err() == nil {
			status, body, _ := call(ctx, cfg.Client, cfg.Quiet, "GET", "/messages?timeoutInSeconds=2&limit=20", nil)
			if ctx.Err() != nil {
				return
			}
			if status != http.StatusOK {
				errs.Add(1)
				sleep(ctx, 10*time.Millisecond)
				continue
			}
			now := time.Now()
			var got struct {
				Messages []struct{ Content, Receipt string }
			}
			_ = json.Unmarshal(body, &got)
			var receipts []string
			for _, m := range got.Messages {
				sent, err := strconv.ParseInt(m.Content, 10, 64)
				if err == nil && sent >= start.UnixNano() {
					mu.Lock()
					lat = append(lat, now.Sub(time.Unix(0, sent)))
					mu.Unlock()
				}
				receipts = append(receipts, `{"receipt":"`+m.Receipt+`"}`)
			}
			if len(receipts) > 0 {
				del := []byte(`{"entries":[` + strings.Join(receipts, ",") + `]}`)
				if status, _, _ := call(context.WithoutCancel(ctx), cfg.Client, cfg.Quiet, "POST", "/messages/actions/deleteMessages", del); status != http.StatusOK {
					errs.Add(1)
				}
			}
		}
	}()
	tick := time.NewTicker(time.Second / time.Duration(cfg.QuietRate))
	defer tick.Stop()
	for time.Since(start) < cfg.Phase && ctx.Err() == nil {
		<-tick.C
		body := []byte(`{"messages":[{"content":"` + strconv.FormatInt(time.Now().UnixNano(), 10) + `"}]}`)
		if status, _, _ := call(ctx, cfg.Client, cfg.Quiet, "POST", "/messages", body); status != http.StatusOK {
			errs.Add(1)
		}
	}
	sleep(ctx, 500*time.Millisecond) // the last messages arrive
	cancel()
	<-consumed
	mu.Lock()
	defer mu.Unlock()
	return lat
}

// wait is how long a noisy client waits after a refusal whose Retry-After said retry.
func (cfg Config) wait(retry time.Duration) time.Duration {
	if cfg.RetryAfter && retry > 0 {
		return retry
	}
	return cfg.Backoff
}

// call sends one request on the tenant's queue and returns the status, the body and the Retry-After (status 0 on
// a transport error).
func call(ctx context.Context, client *http.Client, t Tenant, method, path string, body []byte) (int, []byte, time.Duration) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.BaseURL+"/20210201/queues/"+t.QueueID+path, rd)
	if err != nil {
		return 0, nil, 0
	}
	req.Header.Set("Authorization", "Bearer "+t.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, b, time.Duration(retry) * time.Second
}

func percentile(v []time.Duration, p float64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
