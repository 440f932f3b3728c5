package tests

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestExactlyOnceUnderConcurrency publishes 5,000 messages from 5 producers while 8 consumers lease (limit 32,
// long poll, a lease long enough never to expire) and acknowledge them: every message is received exactly once,
// by one consumer, and deleted; nothing is left.
func TestExactlyOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	const (
		producers = 5
		consumers = 8
		total     = 5000
		batch     = 20
	)
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithVisibility(600))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	start := time.Now()
	var (
		mu        sync.Mutex
		published = map[int64]string{} // id → content
		received  = map[int64][]int{}  // id → the consumers that received it
		contents  = map[int64]string{} // id → content as received
		failures  []error
		acked     atomic.Int64
		wg        sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
		cancel()
	}

	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range total / producers / batch {
				entries := make([]sdk.PutMessagesDetailsEntry, batch)
				for i := range entries {
					entries[i] = e2e.Msg(fmt.Sprintf("p%d-b%d-m%d", p, b, i))
				}
				resp, err := c.PutMessagesWithResponse(ctx, q, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: entries})
				if err != nil || resp.StatusCode() != http.StatusOK {
					fail(fmt.Errorf("producer %d: put: %v %s", p, err, e2e.Body(resp)))
					return
				}
				mu.Lock()
				for i, r := range resp.JSON200.Messages {
					if _, dup := published[r.Id]; dup {
						failures = append(failures, fmt.Errorf("id %d returned by two puts", r.Id))
					}
					published[r.Id] = entries[i].Content
				}
				mu.Unlock()
			}
		}()
	}

	for n := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for acked.Load() < total && ctx.Err() == nil {
				resp, err := c.GetMessagesWithResponse(ctx, q, &sdk.GetMessagesParams{Limit: e2e.Ptr(32), TimeoutInSeconds: e2e.Ptr(1)})
				if err != nil || resp.StatusCode() != http.StatusOK {
					if ctx.Err() == nil {
						fail(fmt.Errorf("consumer %d: get: %v %s", n, err, e2e.Body(resp)))
					}
					return
				}
				got := resp.JSON200.Messages
				mu.Lock()
				for _, m := range got {
					received[m.Id] = append(received[m.Id], n)
					contents[m.Id] = m.Content
					if m.DeliveryCount != 1 {
						failures = append(failures, fmt.Errorf("message %d delivered with deliveryCount %d", m.Id, m.DeliveryCount))
					}
				}
				mu.Unlock()
				for start := 0; start < len(got); start += 20 {
					var entries []sdk.DeleteMessagesDetailsEntry
					for _, m := range got[start:min(start+20, len(got))] {
						entries = append(entries, sdk.DeleteMessagesDetailsEntry{Receipt: m.Receipt})
					}
					del, err := c.DeleteMessagesWithResponse(context.WithoutCancel(ctx), q, &sdk.DeleteMessagesParams{},
						sdk.DeleteMessagesDetails{Entries: entries})
					if err != nil || del.StatusCode() != http.StatusOK || del.JSON200.ClientFailures+del.JSON200.ServerFailures > 0 {
						fail(fmt.Errorf("consumer %d: delete: %v %s", n, err, e2e.Body(del)))
						return
					}
					acked.Add(int64(len(entries)))
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d messages published and consumed in %v", total, time.Since(start))
	require.NoError(t, errors.Join(failures...))

	require.NoError(t, ctx.Err(), "the consumers did not finish in time: %d of %d acknowledged", acked.Load(), total)
	require.Equal(t, total, len(published))
	require.Equal(t, total, len(received), "every message is received")
	for id, by := range received {
		require.Equal(t, 1, len(by), "message %d was received by consumers %v", id, by)
		require.Equal(t, published[id], contents[id], "message %d", id)
	}
	require.EqualValues(t, total, acked.Load())

	c.RequireStats(t, q, 0, 0, 0, 0)
	require.Zero(t, c.Stats(t, q).Queue.SizeInBytes)
	require.Zero(t, srv.StoredMessages(t, q))
	require.Empty(t, c.Get(t, q, e2e.Limit(32)))
}

// TestPurgeWhileConsuming: a purge deletes every message it should even while consumers keep leasing and
// releasing them (a lease rewrites the row).
func TestPurgeWhileConsuming(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	for b := range 150 {
		entries := make([]sdk.PutMessagesDetailsEntry, 20)
		for i := range entries {
			entries[i] = e2e.Msg(fmt.Sprintf("m%d-%d", b, i))
		}
		c.Put(t, q, entries...)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var leases atomic.Int64
	for range 4 { // lease with visibility 0: every lease rewrites rows that stay visible
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := c.GetMessagesWithResponse(ctx, q, &sdk.GetMessagesParams{Limit: e2e.Ptr(32), VisibilityInSeconds: e2e.Ptr(0), TimeoutInSeconds: e2e.Ptr(0)})
				if err == nil && resp.JSON200 != nil && len(resp.JSON200.Messages) > 0 {
					leases.Add(1)
				}
			}
		}()
	}
	// The consumers are leasing (the overlap with the purge is the subject).
	require.Eventually(t, func() bool { return leases.Load() >= 8 }, 10*time.Second, 5*time.Millisecond)
	srv.Purge(t, c, q, sdk.PurgeTypeBOTH)
	cancel()
	wg.Wait()
	require.Zero(t, srv.StoredMessages(t, q), "messages that were being leased survived the purge")
}

// TestPutsRacingQueueDelete: puts that race a queue delete (nodes cache queue states briefly) leave no messages
// behind once the queue is DELETED and the maintainer ran.
func TestPutsRacingQueueDelete(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	ctx := context.Background()
	c.Put(t, q, e2e.Msg("warm the caches"))

	stop := make(chan struct{})
	var accepted, notFound atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.PutMessagesWithResponse(ctx, q, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: []sdk.PutMessagesDetailsEntry{e2e.Msg("racing")}})
				switch {
				case err != nil:
				case resp.StatusCode() == http.StatusOK:
					accepted.Add(1)
				case resp.StatusCode() == http.StatusNotFound:
					notFound.Add(1)
				}
			}
		}()
	}
	// Puts are flowing (the race with the delete is the subject).
	require.Eventually(t, func() bool { return accepted.Load() >= 10 }, 10*time.Second, 5*time.Millisecond)
	resp, err := c.DeleteQueueWithResponse(ctx, q, &sdk.DeleteQueueParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode(), string(resp.Body))
	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, srv.WaitWorkRequest(t, c, resp.HTTPResponse.Header.Get("opc-work-request-id")).Status)
	// Until the node's queue cache has seen the deletion (it refreshes within its TTL): a put that starts from now
	// on is refused.
	require.Eventually(t, func() bool { return notFound.Load() > 0 }, 10*time.Second, 5*time.Millisecond)
	close(stop)
	wg.Wait()
	require.Positive(t, accepted.Load())

	_, err = srv.Node.Maintainer().RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, srv.StoredMessages(t, q), "messages of a deleted queue are left behind")
}
