package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
)

// RetryTokens implements opc-retry-token for POST requests: the first 2xx response is kept for 24 h and replayed
// to a retry with the same token and body; a different body answers 409 Conflict; a retry while the first
// request is still running answers 409 too. Failed requests release the token so that a retry runs again.
func RetryTokens(keys *persistence.IdempotencyKeys) gin.HandlerFunc {
	return func(c *gin.Context) {
		token := c.GetHeader("opc-retry-token")
		p := iam.PrincipalFrom(c.Request.Context())
		if token == "" || c.Request.Method != http.MethodPost || p == nil || c.FullPath() == "" || len(token) > 64 {
			c.Next()
			return
		}
		body, err := io.ReadAll(c.Request.Body)
		if err != nil {
			if IsTooLarge(err) {
				apierror.Write(c, fault.PayloadTooLarge("the request body is too large"))
				return
			}
			apierror.Write(c, fault.InvalidParameter("body: %v", err))
			return
		}
		c.Request.Body = io.NopCloser(bytes.NewReader(body))
		h := sha256.New()
		h.Write([]byte(c.Request.URL.RequestURI()))
		h.Write([]byte{0})
		h.Write(body)
		hash := h.Sum(nil)
		op := c.Request.Method + " " + c.FullPath()
		ctx := c.Request.Context()

		prior, reserved, err := keys.Reserve(ctx, p.TenancyID, op, token, hash)
		if err != nil {
			apierror.Write(c, err)
			return
		}
		if !reserved {
			switch {
			case !prior.SameRequest(hash):
				apierror.Write(c, fault.Conflict("opc-retry-token: the token was already used with a different request"))
			case prior.StatusCode == 0:
				apierror.Write(c, fault.Conflict("opc-retry-token: a request with this token is still in progress"))
			default:
				for k, v := range prior.Headers {
					c.Header(k, v)
				}
				if len(prior.Body) == 0 { // a 202 action answers with headers only
					c.AbortWithStatus(prior.StatusCode)
					return
				}
				c.Data(prior.StatusCode, "application/json; charset=utf-8", prior.Body)
				c.Abort()
			}
			return
		}

		// The token must leave the in-progress state whatever happens next: a response that cannot be stored, a
		// failed request, a panic in the handler or a client that went away all release it, so that a retry runs
		// again instead of answering "in progress" for 24 hours.
		done := context.WithoutCancel(ctx)
		stored := false
		defer func() {
			if !stored {
				_ = keys.Release(done, p.TenancyID, op, token)
			}
		}()
		rec := &recorder{ResponseWriter: c.Writer}
		c.Writer = rec
		c.Next()
		status := rec.Status()
		if status >= 200 && status < 300 {
			headers := map[string]string{}
			for _, k := range []string{"etag", "opc-work-request-id", "location"} {
				if v := rec.Header().Get(k); v != "" {
					headers[k] = v
				}
			}
			stored = keys.Store(done, p.TenancyID, op, token, status, headers, rec.body.Bytes()) == nil
		}
	}
}

// recorder keeps a copy of the response body.
type recorder struct {
	gin.ResponseWriter
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) WriteString(s string) (int, error) {
	r.body.WriteString(s)
	return r.ResponseWriter.WriteString(s)
}
