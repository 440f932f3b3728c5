package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// Watch opens a watch on the server at baseURL as token's principal and closes it when the test ends.
func Watch(t testing.TB, baseURL, token, queueID string, opts sdk.WatchOptions) *sdk.Watcher {
	t.Helper()
	opts.Token = token
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := sdk.Watch(ctx, baseURL, queueID, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// Receive waits for n pushed messages.
func Receive(t testing.TB, w *sdk.Watcher, n int, within time.Duration) []sdk.GetMessage {
	t.Helper()
	var out []sdk.GetMessage
	deadline := time.After(within)
	for len(out) < n {
		select {
		case m, ok := <-w.Messages():
			require.True(t, ok, "the watch ended: %v", w.Err())
			out = append(out, m)
		case <-deadline:
			require.FailNowf(t, "timeout", "received %d of %d messages in %s", len(out), n, within)
		}
	}
	return out
}

// ReceiveNone checks that nothing is pushed for d (the duration is the subject: nothing comes within it).
func ReceiveNone(t testing.TB, w *sdk.Watcher, d time.Duration) {
	t.Helper()
	select {
	case m, ok := <-w.Messages():
		if ok {
			require.FailNowf(t, "unexpected message", "pushed %d (%q)", m.Id, m.Content)
		}
	case <-time.After(d):
	}
}
