package messaging

import (
	"container/list"
	"sync"
	"time"
)

// waiters are the long-polling GetMessages calls of this node, per queue, in arrival order. They hold no
// database connection while they wait: a wake-up (a local put, a NOTIFY from another node, or the fallback poll)
// makes one of them try to lease, and a waiter that leased something wakes the next one, so a burst of messages
// cascades through the waiters without waking all of them for one message.
type waiters struct {
	mu       sync.Mutex
	byQueue  map[string]*list.List // of *waiter
	lastPoll map[string]time.Time  // fallback polls are limited to one per queue per pollInterval
}

type waiter struct {
	queueID string
	wake    chan struct{} // buffered 1: a pending wake-up
	elem    *list.Element
}

func newWaiters() *waiters {
	return &waiters{byQueue: map[string]*list.List{}, lastPoll: map[string]time.Time{}}
}

func (ws *waiters) add(queueID string) *waiter {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	l := ws.byQueue[queueID]
	if l == nil {
		l = list.New()
		ws.byQueue[queueID] = l
	}
	w := &waiter{queueID: queueID, wake: make(chan struct{}, 1)}
	w.elem = l.PushBack(w)
	return w
}

func (ws *waiters) remove(w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	l := ws.byQueue[w.queueID]
	if l == nil || w.elem == nil {
		return
	}
	l.Remove(w.elem)
	w.elem = nil
	if l.Len() == 0 {
		delete(ws.byQueue, w.queueID)
		delete(ws.lastPoll, w.queueID)
	}
	// A wake-up this waiter received but did not use passes on to the next one.
	select {
	case <-w.wake:
		ws.wakeLocked(w.queueID, 1)
	default:
	}
}

// wakeOne wakes the oldest waiter of the queue that has no pending wake-up.
func (ws *waiters) wakeOne(queueID string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.wakeLocked(queueID, 1)
}

// wakeAll wakes every waiter (after a reconnect of the listener, when notifications may have been missed).
func (ws *waiters) wakeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for q, l := range ws.byQueue {
		ws.wakeLocked(q, l.Len())
	}
}

func (ws *waiters) wakeLocked(queueID string, n int) {
	l := ws.byQueue[queueID]
	if l == nil {
		return
	}
	for e := l.Front(); e != nil && n > 0; e = e.Next() {
		select {
		case e.Value.(*waiter).wake <- struct{}{}:
			n--
		default: // already has a pending wake-up
		}
	}
}

// mayPoll reports whether a waiter of the queue may run the fallback poll now (one per queue per interval).
func (ws *waiters) mayPoll(queueID string, interval time.Duration) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	now := time.Now()
	if now.Sub(ws.lastPoll[queueID]) < interval {
		return false
	}
	ws.lastPoll[queueID] = now
	return true
}

// count is the number of waiting calls on this node.
func (ws *waiters) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	n := 0
	for _, l := range ws.byQueue {
		n += l.Len()
	}
	return n
}
