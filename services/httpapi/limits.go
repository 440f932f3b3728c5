package httpapi

import (
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/limits"
)

// UsageCounter counts each served request for billing (metering.Meter).
type UsageCounter interface {
	CountRequest(tenancyID, queueID string, in, out int64)
}

// Limits enforces, for every authenticated request and before its body is read: the node's bound on request
// bytes in flight (503 ServiceUnavailable with Retry-After), the tenancy's rate limits and, on data-plane calls,
// the queue's (429 TooManyRequests with Retry-After), and the tenancy's share of concurrent GetMessages on this
// node (429). After the handler it charges the response's bytes to the rate limits and counts the request's
// usage. bodyLimit is the most a request of the route may send (reserved for a body of undeclared length).
func Limits(l *limits.Service, usage UsageCounter, bodyLimit func(c *gin.Context) int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		principal := iam.PrincipalFrom(c.Request.Context())
		if principal == nil {
			c.Next() // public routes (health, the spec): no tenancy to charge
			return
		}
		tenancyID := principal.TenancyID
		route := c.FullPath()
		queueID := ""
		if isQueueDataPlane(route) {
			queueID = c.Param("queueId")
		}
		// A body declared over the route's limit is refused with 413 next (BodyLimit): it is charged and reserved
		// only up to the limit.
		limit := bodyLimit(c)
		declared := min(max(c.Request.ContentLength, 0), limit)
		reserve := declared
		var counted *countingBody
		if c.Request.ContentLength < 0 && c.Request.Body != nil && c.Request.Body != http.NoBody {
			reserve = limit
			counted = &countingBody{ReadCloser: c.Request.Body}
			c.Request.Body = counted
		}
		if reserve > 0 {
			release, ok := l.Admit(reserve)
			if !ok {
				refuseUnread(c, reserve)
				apierror.Write(c, fault.Unavailable(1, "the server holds its most request bytes in flight; retry"))
				return
			}
			defer release()
		}
		if refusal, ok := l.AllowRequest(tenancyID, queueID, declared); !ok {
			refuseUnread(c, reserve)
			apierror.Write(c, tooManyRequests(refusal, queueID))
			return
		}
		if isGetMessages(c.Request.Method, route) {
			release, ok := l.AcquireLongPoll(tenancyID)
			if !ok {
				apierror.Write(c, fault.TooManyRequests(1, "the tenancy has its most GetMessages calls in progress on this node (quota %q: %d across %d nodes)",
					persistence.QuotaLongPolls, l.Limit(tenancyID, persistence.QuotaLongPolls), l.LiveNodes()))
				return
			}
			defer release()
		}
		c.Next()
		var in int64
		if counted != nil {
			in = counted.n
		}
		out := int64(max(c.Writer.Size(), 0))
		l.Charge(tenancyID, queueID, in, out)
		if usage != nil {
			usageQueue := queueID
			if c.Writer.Status() >= 400 {
				usageQueue = "" // a queue named by a failed call may not exist: no row per made-up id
			}
			usage.CountRequest(tenancyID, usageQueue, declared+in, out)
		}
	}
}

func tooManyRequests(r limits.Refusal, queueID string) error {
	if r.Queue {
		return fault.TooManyRequests(r.RetryAfter, "queue %s is over its %s limit on this node: slow down and retry", queueID, r.Limit)
	}
	return fault.TooManyRequests(r.RetryAfter, "the tenancy is over its %s quota: slow down and retry (quota %q)", r.Limit, r.Limit)
}

// unreadBodyMax is the largest unread body a refusal leaves to be drained so that the connection is kept.
const unreadBodyMax = 16 << 10

// refuseUnread closes the connection after a refusal whose body (of up to n bytes) is larger than unreadBodyMax:
// net/http would otherwise read and discard it to keep the connection, and a flood of refused 2 MB puts would
// cost the node the bytes it refused.
func refuseUnread(c *gin.Context, n int64) {
	if n > unreadBodyMax {
		c.Header("Connection", "close")
	}
}

// isQueueDataPlane reports whether a route is a data-plane call on one queue (messages, stats, channels,
// consumers, metrics, redrive), whose queue's rate limits apply.
func isQueueDataPlane(route string) bool {
	rest, ok := strings.CutPrefix(route, "/20210201/queues/:queueId/")
	return ok && rest != "actions/changeCompartment" && rest != "actions/purge"
}

func isGetMessages(method, route string) bool {
	return method == "GET" && route == "/20210201/queues/:queueId/messages"
}

// countingBody counts the bytes read from a body of undeclared length.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}
