package messaging

import (
	"container/list"
	"sync"
	"time"
)

// waiters are the long-polling GetMessages calls of this node, per queue and consumer group (and apart, per
// group, those reading its DLQ, which new messages are not for), in arrival order.
// They hold no database connection while they wait: a wake-up (a local put, a NOTIFY from another node, or the
// fallback poll) makes one waiter of each group try to lease, and a waiter that leased something wakes the next
// one of its group, so a burst of messages cascades through the waiters without waking all of them for one
// message. Standby consumers of single-active-consumer queues wait apart: new messages are not for them, only a
// change of consumers (wakeStandby) is.
type waiters struct {
	mu       sync.Mutex
	byQueue  map[string]map[waitGroup]*list.List // queue → group (or its DLQ) → *waiter
	standby  map[string]*list.List               // queue → standby *waiter
	lastPoll map[waitKey]time.Time               // fallback polls are limited to one per group per interval
}

type waitGroup struct {
	groupNo int32
	dlq     bool
}

type waitKey struct {
	queueID string
	waitGroup
}

type waiter struct {
	key     waitKey
	wake    chan struct{} // buffered 1: a pending wake-up
	elem    *list.Element
	standby bool
}

func newWaiters() *waiters {
	return &waiters{byQueue: map[string]map[waitGroup]*list.List{}, standby: map[string]*list.List{}, lastPoll: map[waitKey]time.Time{}}
}

// addStandby registers a standby consumer of a single-active-consumer queue.
func (ws *waiters) addStandby(queueID string, groupNo int32) *waiter {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	l := ws.standby[queueID]
	if l == nil {
		l = list.New()
		ws.standby[queueID] = l
	}
	w := &waiter{key: waitKey{queueID, waitGroup{groupNo: groupNo}}, wake: make(chan struct{}, 1), standby: true}
	w.elem = l.PushBack(w)
	return w
}

// wakeStandby wakes every standby consumer of the queue on this node (the consumers changed: one of them may be
// active now).
func (ws *waiters) wakeStandby(queueID string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if l := ws.standby[queueID]; l != nil {
		ws.wakeLocked(l, l.Len())
	}
}

// add registers a long poll of the group (or of its DLQ).
func (ws *waiters) add(queueID string, groupNo int32, dlq bool) *waiter {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	groups := ws.byQueue[queueID]
	if groups == nil {
		groups = map[waitGroup]*list.List{}
		ws.byQueue[queueID] = groups
	}
	key := waitKey{queueID, waitGroup{groupNo, dlq}}
	l := groups[key.waitGroup]
	if l == nil {
		l = list.New()
		groups[key.waitGroup] = l
	}
	w := &waiter{key: key, wake: make(chan struct{}, 1)}
	w.elem = l.PushBack(w)
	return w
}

func (ws *waiters) remove(w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.standby {
		if l := ws.standby[w.key.queueID]; l != nil && w.elem != nil {
			l.Remove(w.elem)
			w.elem = nil
			if l.Len() == 0 {
				delete(ws.standby, w.key.queueID)
			}
		}
		return
	}
	groups := ws.byQueue[w.key.queueID]
	if groups == nil || w.elem == nil {
		return
	}
	l := groups[w.key.waitGroup]
	l.Remove(w.elem)
	w.elem = nil
	if l.Len() == 0 {
		delete(groups, w.key.waitGroup)
		delete(ws.lastPoll, w.key)
		if len(groups) == 0 {
			delete(ws.byQueue, w.key.queueID)
		}
	}
	// A wake-up this waiter received but did not use passes on to the next one.
	select {
	case <-w.wake:
		ws.wakeLocked(groups[w.key.waitGroup], 1)
	default:
	}
}

// wakeOne wakes the oldest waiter of a group that has no pending wake-up.
func (ws *waiters) wakeOne(queueID string, groupNo int32, dlq bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if groups := ws.byQueue[queueID]; groups != nil {
		ws.wakeLocked(groups[waitGroup{groupNo, dlq}], 1)
	}
}

// wakeQueue wakes one waiter of every group of the queue (new messages may have gone to any of them); DLQ
// readers are not woken (new messages are not in a DLQ).
func (ws *waiters) wakeQueue(queueID string) { ws.wakeEachGroup(queueID, false) }

// wakeDLQ wakes one reader of every DLQ of the queue (messages were dead-lettered on another node).
func (ws *waiters) wakeDLQ(queueID string) { ws.wakeEachGroup(queueID, true) }

func (ws *waiters) wakeEachGroup(queueID string, dlq bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for g, l := range ws.byQueue[queueID] {
		if g.dlq == dlq {
			ws.wakeLocked(l, 1)
		}
	}
}

// wakeAll wakes every waiter (after a reconnect of the listener, when notifications may have been missed).
func (ws *waiters) wakeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, groups := range ws.byQueue {
		for _, l := range groups {
			ws.wakeLocked(l, l.Len())
		}
	}
	for _, l := range ws.standby {
		ws.wakeLocked(l, l.Len())
	}
}

func (ws *waiters) wakeLocked(l *list.List, n int) {
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

// mayPoll reports whether a waiter of the group may run the fallback poll now (one per group per interval).
func (ws *waiters) mayPoll(key waitKey, interval time.Duration) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	now := time.Now()
	if now.Sub(ws.lastPoll[key]) < interval {
		return false
	}
	ws.lastPoll[key] = now
	return true
}

// count is the number of waiting calls on this node.
func (ws *waiters) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	n := 0
	for _, groups := range ws.byQueue {
		for _, l := range groups {
			n += l.Len()
		}
	}
	for _, l := range ws.standby {
		n += l.Len()
	}
	return n
}
