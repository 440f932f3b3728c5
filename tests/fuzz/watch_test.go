package fuzz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// fuzzWatch opens watches on queueID and sends them generated frames — commits and negative acknowledgements of
// real and forged receipts, with codes and reasons broken as parameters are, and frames that are not the
// protocol's — until the deadline. It returns how many frames it sent and each distinct server failure: a reply
// or error frame with a 5xx code, or the server closing the watch with an error status.
func fuzzWatch(base, token, queueID string, seed uint64, receipts []string, deadline time.Time) (int, []string) {
	g := &Generator{R: rand.New(rand.NewPCG(seed, 99))}
	var failures []string
	seen := map[string]bool{}
	fail := func(f string) {
		if !seen[f] {
			seen[f] = true
			failures = append(failures, f)
		}
	}
	sent := 0
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(10*time.Second))
		// Messages to push, whose receipts the frames then name.
		put, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/20210201/queues/"+queueID+"/messages",
			strings.NewReader(`{"messages":[{"content":"a"},{"content":"b"},{"content":"c"}]}`))
		put.Header.Set("Authorization", "Bearer "+token)
		put.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(put); err == nil {
			resp.Body.Close()
		}
		url := fmt.Sprintf("%s/20210201/queues/%s/messages/watch?window=%d&autoCommit=%t", base, queueID, 1+g.R.IntN(5), g.chance(0.3))
		conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{
			"Authorization": {"Bearer " + token}, "X-Ferry-Consumer-Id": {fmt.Sprintf("fuzz-%d", g.R.IntN(3))}}})
		if err != nil {
			if resp != nil && resp.StatusCode >= 500 {
				fail(fmt.Sprintf("watch: %d on the upgrade", resp.StatusCode))
			}
			cancel()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for i := 0; i < 50 && time.Now().Before(deadline); i++ {
			typ, frame := websocket.MessageText, g.frame(receipts)
			if g.chance(0.02) {
				typ = websocket.MessageBinary
			}
			if err := conn.Write(ctx, typ, frame); err != nil {
				break
			}
			sent++
			// Read what the server answered (pushed messages are skipped) until the reply, briefly.
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			for {
				_, data, err := conn.Read(rctx)
				if err != nil {
					var ce websocket.CloseError
					if errors.As(err, &ce) && ce.Code == websocket.StatusInternalError {
						fail(fmt.Sprintf("watch: closed with %d %q after frame %q", ce.Code, ce.Reason, frame))
					}
					break
				}
				var answer struct {
					Messages []struct {
						Receipt string `json:"receipt"`
					} `json:"messages"`
					Reply *struct {
						Error *struct{ Code string } `json:"error"`
					} `json:"reply"`
					Error *struct{ Code string } `json:"error"`
				}
				_ = json.Unmarshal(data, &answer)
				for _, m := range answer.Messages {
					receipts = append(receipts, m.Receipt)
				}
				code := ""
				if answer.Error != nil {
					code = answer.Error.Code
				} else if answer.Reply != nil && answer.Reply.Error != nil {
					code = answer.Reply.Error.Code
				}
				if code == "InternalServerError" || code == "ServiceUnavailable" {
					fail(fmt.Sprintf("watch: %s after frame %q", code, frame))
				}
				if answer.Reply != nil || answer.Error != nil {
					break
				}
			}
			rcancel()
		}
		_ = conn.Close(websocket.StatusNormalClosure, "")
		cancel()
	}
	return sent, failures
}

// frame generates a client frame of the watch protocol, mostly well formed, often with broken text.
func (g *Generator) frame(receipts []string) []byte {
	receipt := func() string {
		if len(receipts) > 0 && g.chance(0.7) {
			return g.pick(receipts)
		}
		return g.mutateString("r")
	}
	var b strings.Builder
	b.WriteString(`{"id":"f"`)
	if g.chance(0.5) {
		fmt.Fprintf(&b, `,"commit":[%q]`, receipt())
	}
	if g.chance(0.6) {
		fmt.Fprintf(&b, `,"negative":[%q],"code":%s,"reason":%s`, receipt(),
			g.pick([]string{`"Failed"`, `"Shutdown"`, `"Invalid.Format"`, `"lower"`, `""`, `1`, "\"\xff\"", `"\u0000"`}),
			g.pick([]string{`"why"`, `"a\u0000b"`, "\"\xfe\"", `"\ud800"`, `"` + strings.Repeat("r", 2000) + `"`, `null`, `[]`}))
	}
	b.WriteString("}")
	if g.chance(0.05) {
		return []byte(g.pick(rawTexts))
	}
	return []byte(b.String())
}
