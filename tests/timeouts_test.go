package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestSlowClients: a client that trickles its headers or its body is cut off within the read timeouts (408 or a
// closed connection), while long polls and watches that outlast those timeouts are not.
func TestSlowClients(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	// Generous for a loaded 2-core machine, and far below "never".
	const bound = timeout + 8*time.Second
	srv := testserver.Start(t, func(c *server.Config) { c.ReadHeaderTimeout, c.BodyReadTimeout = timeout, timeout })
	tenancyID, c := srv.Admin(t, "slow")
	token := srv.AdminToken(t, tenancyID)
	q := c.NewQueue(t, tenancyID)
	host := strings.TrimPrefix(srv.URL, "http://")

	// trickle sends head at once, then rest a byte every 500 ms (the timeouts are all that stop it), and returns
	// what the server answered — the status line, or "" when it closed the connection — and when.
	trickle := func(t *testing.T, head, rest string) (string, time.Duration) {
		t.Helper()
		conn, err := net.Dial("tcp", host)
		require.NoError(t, err)
		defer conn.Close()
		start := time.Now()
		answered := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(conn).ReadString('\n')
			answered <- strings.TrimSpace(line)
		}()
		_, err = io.WriteString(conn, head)
		require.NoError(t, err)
		for i := 0; ; i++ {
			select {
			case line := <-answered:
				return line, time.Since(start)
			case <-time.After(500 * time.Millisecond):
			}
			require.Less(t, time.Since(start), 3*bound, "the server still reads the trickle")
			if i < len(rest) {
				if _, err := conn.Write([]byte{rest[i]}); err != nil {
					return <-answered, time.Since(start) // closed while we wrote
				}
			}
		}
	}
	body := `{"messages":[{"content":"` + strings.Repeat("x", 200) + `"}]}`
	put := fmt.Sprintf("POST /20210201/queues/%s/messages HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n", q, host, token)

	t.Run("body with a length", func(t *testing.T) {
		t.Parallel()
		line, took := trickle(t, put+fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)), body)
		require.Contains(t, []string{"HTTP/1.1 408 Request Timeout", ""}, line)
		require.Less(t, took, bound)
		require.GreaterOrEqual(t, took, timeout-100*time.Millisecond, "cut off by the timeout, not before")
	})
	t.Run("chunked body", func(t *testing.T) {
		t.Parallel()
		chunks := ""
		for _, b := range []byte(body) {
			chunks += "1\r\n" + string(b) + "\r\n"
		}
		line, took := trickle(t, put+"Transfer-Encoding: chunked\r\n\r\n", chunks+"0\r\n\r\n")
		require.Contains(t, []string{"HTTP/1.1 408 Request Timeout", ""}, line)
		require.Less(t, took, bound)
	})
	t.Run("body to an unknown route", func(t *testing.T) {
		t.Parallel()
		head := fmt.Sprintf("POST /20210201/nowhere HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n", host)
		_, took := trickle(t, head, strings.Repeat("x", 1000))
		require.Less(t, took, bound, "the 404 is answered and the connection closed, not drained for ever")
	})
	t.Run("headers", func(t *testing.T) {
		t.Parallel()
		line, took := trickle(t, "GET /healthz HTTP/1.1\r\n", "Host: "+host+"\r\nX-Slow: "+strings.Repeat("s", 100)+"\r\n\r\n")
		require.NotEqual(t, "HTTP/1.1 200 OK", line)
		require.Less(t, took, bound)
	})
	t.Run("a body within the timeout", func(t *testing.T) {
		t.Parallel()
		conn, err := net.Dial("tcp", host)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, put+fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)))
		require.NoError(t, err)
		time.Sleep(timeout / 4)
		_, err = io.WriteString(conn, body)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	})

	t.Run("a long poll outlasts the timeouts", func(t *testing.T) {
		t.Parallel()
		lp := c.NewQueue(t, tenancyID)
		start := time.Now()
		got := c.Get(t, lp, e2e.Timeout(3*int(timeout/time.Second)))
		require.Empty(t, got)
		require.GreaterOrEqual(t, time.Since(start), 3*timeout-time.Second, "the long poll ran its full timeout")
		// And a message put while a long poll waits past the timeouts is delivered to it.
		done := make(chan []sdk.GetMessage, 1)
		go func() { done <- c.Get(t, lp, e2e.Timeout(20)) }()
		time.Sleep(timeout + time.Second)
		c.Put(t, lp, e2e.Msg("late"))
		select {
		case msgs := <-done:
			require.Len(t, msgs, 1)
		case <-time.After(20 * time.Second):
			t.Fatal("the long poll did not return the message")
		}
	})
	t.Run("a watch outlasts the timeouts", func(t *testing.T) {
		t.Parallel()
		wq := c.NewQueue(t, tenancyID)
		w := e2e.Watch(t, srv.URL, token, wq, sdk.WatchOptions{Window: 5, AutoCommit: true})
		time.Sleep(timeout + time.Second)
		c.Put(t, wq, e2e.Msg("pushed"))
		require.Len(t, e2e.Receive(t, w, 1, 10*time.Second), 1)
	})
}
