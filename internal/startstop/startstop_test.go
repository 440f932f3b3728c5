package startstop

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// loop counts the loops running at once and the loops ever started.
type loop struct {
	running, most, runs atomic.Int32
}

func (l *loop) run(ctx context.Context) {
	n := l.running.Add(1)
	for {
		most := l.most.Load()
		if n <= most || l.most.CompareAndSwap(most, n) {
			break
		}
	}
	l.runs.Add(1)
	<-ctx.Done()
	l.running.Add(-1)
}

func TestStartTwiceRunsOneLoop(t *testing.T) {
	var b Base
	var l loop
	require.True(t, b.Start(context.Background(), l.run))
	require.False(t, b.Start(context.Background(), l.run))
	<-b.Started()
	b.Stop()
	require.EqualValues(t, 1, l.runs.Load())
	require.EqualValues(t, 0, l.running.Load(), "Stop returns once the loop has returned")
}

func TestStopTwice(t *testing.T) {
	var b Base
	var l loop
	b.Start(context.Background(), l.run)
	b.Stop()
	b.Stop()
	require.EqualValues(t, 0, l.running.Load())
}

func TestStopBeforeStart(t *testing.T) {
	var b Base
	b.Stop()
	select {
	case <-b.Stopped():
	default:
		t.Fatal("Stopped is closed while no loop runs")
	}
	var l loop
	require.True(t, b.Start(context.Background(), l.run), "a Stop before Start does not prevent the Start")
	b.Stop()
}

func TestRestartAfterStop(t *testing.T) {
	var b Base
	var l loop
	for range 3 {
		require.True(t, b.Start(context.Background(), l.run))
		b.Stop()
	}
	require.EqualValues(t, 3, l.runs.Load())
}

// The loop outlives the context it was started with: only Stop ends it.
func TestStartContextCancellationDoesNotStop(t *testing.T) {
	type key struct{}
	var b Base
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "kept"))
	got := make(chan context.Context, 1)
	b.Start(ctx, func(ctx context.Context) {
		got <- ctx
		<-ctx.Done()
	})
	loopCtx := <-got
	require.Equal(t, "kept", loopCtx.Value(key{}), "the loop's context keeps the values")
	cancel()
	require.NoError(t, loopCtx.Err(), "cancelling Start's context does not reach the loop")
	b.Stop()
	require.ErrorIs(t, loopCtx.Err(), context.Canceled)
}

func TestStartedHook(t *testing.T) {
	var b Base
	early := b.Started()
	select {
	case <-early:
		t.Fatal("Started is open before Start")
	default:
	}
	var l loop
	b.Start(context.Background(), l.run)
	<-early // made before Start, closed by it
	stopped := b.Stopped()
	select {
	case <-stopped:
		t.Fatal("Stopped is open while the loop runs")
	default:
	}
	b.Stop()
	<-stopped
	select {
	case <-b.Started():
		t.Fatal("Started is open again after Stop")
	default:
	}
}

// A loop may use the hooks of its own Base while Stop waits for it.
func TestLoopMayCallHooksDuringStop(t *testing.T) {
	var b Base
	b.Start(context.Background(), func(ctx context.Context) {
		<-ctx.Done()
		<-b.Started()
		_ = b.Stopped()
	})
	b.Stop()
}

// Starts and Stops from many goroutines never run two loops at once and leave no loop behind.
func TestConcurrentStartStop(t *testing.T) {
	var b Base
	var l loop
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 200 {
				if i%2 == 0 {
					b.Start(context.Background(), l.run)
				} else {
					b.Stop()
				}
				_ = b.Started()
				_ = b.Stopped()
			}
		})
	}
	wg.Wait()
	b.Stop()
	require.EqualValues(t, 1, l.most.Load(), "never two loops at once")
	require.EqualValues(t, 0, l.running.Load())
	require.Positive(t, l.runs.Load())
}
