package push

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/services/messaging"
	"github.com/ferry-mq/ferry/services/wire"
)

// session is one open watch. Four goroutines: the pusher leases (when the window has room) and writes frames;
// the reader reads the consumer's frames; the pinger pings; run handles the frames and renews the leases, one
// thing at a time, so that a commit and a renewal of the same messages never run at once.
type session struct {
	svc        *Service
	sub        *messaging.Subscription
	conn       *websocket.Conn
	id         string
	tenancyID  string
	window     int
	autoCommit bool

	mu         sync.Mutex
	pending    map[string]struct{}    // receipts pushed and not yet committed or released
	offsets    map[int32]pushedOffset // PARTITION groups: per partition, the last offset pushed (at its generation)
	delivered  int64
	leaving    bool
	lastActive time.Time
	freed      chan struct{} // buffered 1: the window has room again

	ctx         context.Context // ends with the watch
	cancel      context.CancelFunc
	connCtx     context.Context // the connection's calls: ends after the messages were released
	once        sync.Once
	closeCode   websocket.StatusCode
	closeReason string
}

// registration is what the heartbeat writes.
func (ss *session) registration() persistence.Watch {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return persistence.Watch{
		QueueID: ss.sub.QueueID(), GroupNo: ss.sub.GroupNo(), ConsumerID: ss.sub.ConsumerID(), TenancyID: ss.tenancyID,
		SessionID: ss.id, Window: int32(ss.window), AutoCommit: ss.autoCommit, Delivered: ss.delivered,
		Leaving: ss.leaving, LastActive: ss.lastActive, Partition: ss.sub.Partitioned(),
	}
}

// end ends the watch (the first code and reason win); run releases the consumer's messages and then closes the
// connection with them. Safe before run started.
func (ss *session) end(code websocket.StatusCode, reason string) {
	ss.once.Do(func() {
		ss.mu.Lock()
		ss.closeCode, ss.closeReason = code, reason
		ss.mu.Unlock()
	})
	ss.cancel()
}

// run serves the watch until the consumer disconnects, stops answering pings, is removed, or the server stops;
// then the messages the consumer holds are released at once, before the connection is closed.
func (ss *session) run(conn *websocket.Conn) {
	cfg := ss.svc.cfg
	// Every call on the connection runs under connCtx, which outlives ss.ctx: a cancelled context closes a
	// websocket.Conn at once, and the close must wait until the messages are released.
	connCtx, closeConn := context.WithCancel(context.WithoutCancel(ss.ctx))
	defer closeConn()
	ss.conn, ss.connCtx = conn, connCtx
	frames := make(chan clientFrame, 4)
	var wg sync.WaitGroup
	pushCtx, stopPush := context.WithCancel(ss.ctx)
	pushed := make(chan struct{})
	defer func() {
		ss.end(websocket.StatusNormalClosure, "")
		stopPush()
		<-pushed
		ss.leave()
		ss.mu.Lock()
		code, reason := ss.closeCode, ss.closeReason
		ss.mu.Unlock()
		_ = conn.Close(code, reason)
		closeConn()
		wg.Wait()
	}()
	if ss.ctx.Err() != nil { // ended before it started
		close(pushed)
		return
	}
	partitioned := ss.sub.Partitioned()
	loadBalancing := "MESSAGE"
	if partitioned {
		loadBalancing = "PARTITION"
	}
	if err := ss.write(helloFrame{ConsumerID: ss.sub.ConsumerID(), ConsumerGroupID: ss.sub.GroupID(), Window: ss.window,
		AutoCommit: ss.autoCommit, LoadBalancing: loadBalancing}); err != nil {
		close(pushed)
		return
	}
	ss.sub.OnStandby = func(standby bool) {
		status := messaging.StatusRunning
		if standby {
			status = messaging.StatusStandby
		}
		_ = ss.write(statusFrame{Status: status})
	}
	wg.Add(2)
	go func() { defer wg.Done(); ss.read(frames) }()
	go func() { defer wg.Done(); ss.ping() }()
	go func() {
		defer close(pushed)
		if partitioned {
			ss.pushPartitions(pushCtx)
		} else {
			ss.push(pushCtx)
		}
	}()

	renew := time.NewTicker(cfg.Lease / 3)
	defer renew.Stop()
	for {
		select {
		case <-ss.ctx.Done():
			return
		case f, ok := <-frames:
			if !ok {
				return
			}
			ss.touch()
			if f.partitionFrame {
				ss.handlePartitions(f)
				continue
			}
			if f.Negative != nil && f.Code == shutdownCode {
				stopPush()
				<-pushed
			}
			ss.handle(f)
		case <-renew.C:
			if ss.holding() {
				if err := ss.sub.Renew(ss.ctx, cfg.Lease, cfg.Lease*2/3); err != nil && ss.ctx.Err() == nil {
					ss.svc.logger.Warn("renewing a watch's leases", "consumer", ss.sub.ConsumerID(), "error", err)
				}
			}
		}
	}
}

// push leases as many messages as the window has room for and writes them, until ctx ends.
func (ss *session) push(ctx context.Context) {
	defer ss.sub.Pause()
	for ctx.Err() == nil {
		room := ss.room()
		if room <= 0 {
			ss.sub.Pause() // a wake-up must go to a consumer with room
			select {
			case <-ss.freed:
				continue
			case <-ctx.Done():
				return
			}
		}
		got, err := ss.sub.Lease(ctx, min(room, messaging.MaxPushLease), ss.svc.cfg.Lease)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, messaging.ErrGone) {
				ss.end(websocket.StatusGoingAway, "the queue or the consumer group was deleted")
				return
			}
			ss.svc.logger.Warn("watch lease", "consumer", ss.sub.ConsumerID(), "error", err)
			select { // the database is unwell: try again shortly
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
			continue
		}
		// The frame is the GetMessages body, written by the same hand-written encoder.
		frame := wire.AppendGetMessages(nil, got)
		receipts := make([]string, len(got))
		for i, m := range got {
			receipts[i] = m.Receipt
		}
		ss.mu.Lock()
		if !ss.autoCommit {
			for _, r := range receipts {
				ss.pending[r] = struct{}{}
			}
		}
		ss.delivered += int64(len(got))
		ss.lastActive = time.Now()
		ss.mu.Unlock()
		if err := ss.writeRaw(frame); err != nil {
			ss.end(websocket.StatusPolicyViolation, "the consumer did not read in time")
			return // what was leased is released when the watch ends
		}
		if ss.autoCommit {
			if _, err := ss.sub.Commit(context.WithoutCancel(ctx), receipts); err != nil {
				ss.svc.logger.Warn("watch auto-commit", "consumer", ss.sub.ConsumerID(), "error", err)
			}
		}
	}
}

// handle applies a consumer's frame and answers it.
func (ss *session) handle(f clientFrame) {
	ctx := ss.ctx
	var errs []entryError
	var frameErr error
	settle := func(receipts []string, results []messaging.EntryError, offset int) {
		ss.mu.Lock()
		for i, r := range receipts {
			// Acknowledged, released, or no longer this consumer's (stale, gone, not a receipt): off the window.
			delete(ss.pending, r)
			if e := results[i]; e != nil {
				body := bodyOf(e)
				errs = append(errs, entryError{Index: offset + i, Code: body.Code, Message: body.Message})
			}
		}
		ss.mu.Unlock()
		select {
		case ss.freed <- struct{}{}:
		default:
		}
	}
	switch {
	case len(f.Commit) == 0 && f.Negative == nil:
		frameErr = fault.InvalidParameter("frame: send {\"commit\":[receipts]} or {\"negative\":[receipts],\"code\":…}")
	case len(f.Commit)+len(f.Negative) > openapi.MaxWatchWindow:
		frameErr = fault.InvalidParameter("frame: at most %d receipts", openapi.MaxWatchWindow)
	}
	if frameErr == nil && len(f.Commit) > 0 {
		results, err := ss.sub.Commit(ctx, f.Commit)
		if err != nil {
			frameErr = err
		} else {
			settle(f.Commit, results, 0)
		}
	}
	if frameErr == nil && f.Negative != nil {
		if f.Code == shutdownCode {
			frameErr = ss.shutdown()
		} else if len(f.Negative) > 0 || f.Code != "" {
			results, err := ss.sub.Negative(ctx, f.Negative, f.Code, f.Reason)
			if err != nil {
				frameErr = err
			} else {
				settle(f.Negative, results, len(f.Commit))
			}
		}
	}
	r := reply{ID: f.ID, Errors: errs}
	if r.Errors == nil {
		r.Errors = []entryError{}
	}
	if frameErr != nil {
		r.Error = bodyOf(frameErr)
	}
	_ = ss.write(replyFrame{Reply: r})
}

// shutdown stops the pushing for good (the pusher has already stopped) and releases what the consumer holds.
func (ss *session) shutdown() error {
	ss.mu.Lock()
	already := ss.leaving
	ss.leaving = true
	ss.pending = map[string]struct{}{}
	ss.mu.Unlock()
	if already {
		return nil
	}
	if _, err := ss.sub.Shutdown(ss.ctx, ss.id); err != nil {
		return err
	}
	return ss.write(statusFrame{Status: messaging.StatusLeaving})
}

// read passes the consumer's frames to run; a frame that is not JSON is answered with an error and skipped.
func (ss *session) read(frames chan<- clientFrame) {
	defer close(frames)
	defer ss.end(websocket.StatusNormalClosure, "") // the consumer is gone
	for {
		typ, data, err := ss.conn.Read(ss.connCtx)
		if err != nil {
			return
		}
		var f clientFrame
		if ss.sub.Partitioned() {
			f, err = parsePartitionFrame(data)
		} else {
			err = json.Unmarshal(data, &f)
		}
		if typ != websocket.MessageText || err != nil {
			_ = ss.write(errorFrame{Error: *bodyOf(fault.InvalidParameter("frame: not a JSON object of the watch protocol"))})
			continue
		}
		// The request bodies' rule for text: a reason is stored with the messages it releases.
		if err := httpapi.JSONTextProblem(data); err != nil {
			_ = ss.write(errorFrame{Error: *bodyOf(err)})
			continue
		}
		select {
		case frames <- f:
		case <-ss.ctx.Done():
			return
		}
	}
}

// ping pings the consumer every PingInterval; one that does not answer within DeadAfter is dead.
func (ss *session) ping() {
	cfg := ss.svc.cfg
	t := time.NewTicker(cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ss.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(ss.connCtx, cfg.DeadAfter)
		err := ss.conn.Ping(ctx)
		cancel()
		if err != nil {
			if ss.ctx.Err() == nil {
				ss.svc.logger.Info("watch consumer stopped answering pings", "consumer", ss.sub.ConsumerID())
			}
			ss.end(websocket.StatusPolicyViolation, "no answer to ping")
			return
		}
	}
}

// write sends one frame within the write timeout.
func (ss *session) write(frame any) error {
	data, err := json.Marshal(frame)
	if err != nil {
		return err
	}
	return ss.writeRaw(data)
}

// writeRaw sends an encoded frame within the write timeout.
func (ss *session) writeRaw(data []byte) error {
	ctx, cancel := context.WithTimeout(ss.connCtx, ss.svc.cfg.WriteTimeout)
	defer cancel()
	return ss.conn.Write(ctx, websocket.MessageText, data)
}

// leave ends the registration and releases the consumer's messages (once the watch is over). When the
// registration belongs to another watch now, nothing is released: the messages may be that watch's.
func (ss *session) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ss.sub.Leave(ctx, ss.id); err != nil && !errors.Is(err, context.Canceled) {
		ss.svc.logger.Warn("closing a watch", "consumer", ss.sub.ConsumerID(), "error", err)
	}
}

// room is how many messages the pusher may lease now. While the consumer still holds messages, it waits for a
// quarter of the window to be free rather than leasing the slots one commit frees at a time: a consumer that
// commits each frame as it works through the window would otherwise make a lease of a few messages per commit
// (measured: 11 messages per lease with window 100, and PostgreSQL spent more per message than on long polls).
func (ss *session) room() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.leaving {
		return 0
	}
	if ss.autoCommit {
		return ss.window
	}
	room := ss.window - len(ss.pending)
	if len(ss.pending) > 0 && room < max(ss.window/4, 1) {
		return 0
	}
	return room
}

func (ss *session) holding() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.pending) > 0
}

func (ss *session) touch() {
	ss.mu.Lock()
	ss.lastActive = time.Now()
	ss.mu.Unlock()
}

func (s *Service) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
