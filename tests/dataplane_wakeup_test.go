package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestLongPollWakesForEveryBurst races puts against long-polling consumers that are busy leasing and
// acknowledging: bursts of 1–4 concurrent puts, each burst awaited before the next. A put whose wake-up was lost
// is only found by the fallback poll (a second later) — or, in a steady stream, by the next put's wake-up, which
// hides the loss as a millisecond of latency. With a pause after every burst, every message must arrive within
// 500 ms of its put (milliseconds, normally; the margin is for a loaded test machine).
func TestLongPollWakesForEveryBurst(t *testing.T) {
	t.Parallel()
	const (
		consumers = 4
		bursts    = 400
		late      = 500 * time.Millisecond // the fallback poll comes 0.7–1.3 s after a lost wake-up
	)
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "wakeups")
	q := createQueue(t, c, tenancyID, withVisibility(600))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var mu sync.Mutex
	arrived := map[string]chan struct{}{} // content → closed when received
	arrival := func(content string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		ch := arrived[content]
		if ch == nil {
			ch = make(chan struct{})
			arrived[content] = ch
		}
		return ch
	}
	var wg sync.WaitGroup
	for range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, wait := 32, 20
			for ctx.Err() == nil {
				resp, err := c.GetMessagesWithResponse(ctx, q, &sdk.GetMessagesParams{Limit: &n, TimeoutInSeconds: &wait})
				if err != nil || resp.StatusCode() != http.StatusOK {
					continue
				}
				var entries []sdk.DeleteMessagesDetailsEntry
				for _, m := range resp.JSON200.Messages {
					close(arrival(m.Content))
					entries = append(entries, sdk.DeleteMessagesDetailsEntry{Receipt: m.Receipt})
				}
				if len(entries) > 0 {
					_, _ = c.DeleteMessagesWithResponse(context.WithoutCancel(ctx), q, &sdk.DeleteMessagesParams{},
						sdk.DeleteMessagesDetails{Entries: entries})
				}
			}
		}()
	}
	defer wg.Wait()
	defer cancel()

	var slow []string
	var lat []time.Duration
	for b := range bursts {
		k := 1 + b%4
		var puts sync.WaitGroup
		for i := range k {
			content := "b" + strconv.Itoa(b) + "-" + strconv.Itoa(i)
			ch := arrival(content)
			puts.Add(1)
			go func() {
				defer puts.Done()
				start := time.Now()
				put(t, c, q, msg(content))
				select {
				case <-ch:
				case <-time.After(3 * time.Second):
				}
				d := time.Since(start)
				mu.Lock()
				lat = append(lat, d)
				if d > late {
					slow = append(slow, fmt.Sprintf("%s after %s", content, d.Round(time.Millisecond)))
				}
				mu.Unlock()
			}()
		}
		puts.Wait()
		time.Sleep(time.Duration(b%3) * time.Millisecond)
	}
	slices.Sort(lat)
	t.Logf("put→receive over %d messages: p50 %s, p99 %s, max %s", len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	require.Empty(t, slow, "messages received more than %s after their put (a lost wake-up)", late)
}
