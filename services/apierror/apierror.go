// Package apierror is ferry's one mapping from failures to HTTP: every error a handler returns becomes an
// OCI-style {"code","message"} body with the matching status. Faults (package fault) map by their kind; an
// *Error built here carries an HTTP-only status of its own (405, 426); anything else is a 500 whose message never
// carries internals.
package apierror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/persistence"
)

// Error is an API error: an HTTP status, an OCI error code and a message that names the offending field.
type Error struct {
	Status     int    `json:"-"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	RetryAfter int    `json:"-"` // seconds, for 429 and 503
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New builds an Error with a status and code that no fault kind has (the HTTP layer's own answers).
func New(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// byKind is each fault kind's status and OCI code (DESIGN section 4).
var byKind = map[fault.Kind]struct {
	status int
	code   string
}{
	fault.KindInvalidParameter:   {http.StatusBadRequest, "InvalidParameter"},
	fault.KindMissingParameter:   {http.StatusBadRequest, "MissingParameter"},
	fault.KindLimitExceeded:      {http.StatusBadRequest, "LimitExceeded"},
	fault.KindNotAuthenticated:   {http.StatusUnauthorized, "NotAuthenticated"},
	fault.KindNotFound:           {http.StatusNotFound, "NotAuthorizedOrNotFound"},
	fault.KindConflict:           {http.StatusConflict, "Conflict"},
	fault.KindIncorrectState:     {http.StatusConflict, "IncorrectState"},
	fault.KindPreconditionFailed: {http.StatusPreconditionFailed, "NoEtagMatch"},
	fault.KindPayloadTooLarge:    {http.StatusRequestEntityTooLarge, "PayloadTooLarge"},
	fault.KindTooManyRequests:    {http.StatusTooManyRequests, "TooManyRequests"},
	fault.KindUnavailable:        {http.StatusServiceUnavailable, "ServiceUnavailable"},
}

// From converts any error to an *Error (500 for the unknown ones).
func From(err error) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	if f := fault.As(err); f != nil {
		if m, ok := byKind[f.Kind]; ok {
			return &Error{Status: m.status, Code: m.code, Message: f.Message, RetryAfter: f.RetryAfter}
		}
	}
	if persistence.Unreachable(err) {
		return &Error{Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable",
			Message: "the database is not reachable; retry", RetryAfter: 1}
	}
	if errors.Is(err, context.Canceled) {
		// The caller went away (or the server is stopping): nobody reads this answer; it is not a server fault.
		return New(http.StatusServiceUnavailable, "ServiceUnavailable", "the request was cancelled")
	}
	return New(http.StatusInternalServerError, "InternalServerError", "internal error; quote the opc-request-id when reporting it")
}

// Write answers err as JSON and aborts the gin chain. 5xx errors are logged with the request id.
func Write(c *gin.Context, err error) {
	apiErr := From(err)
	if apiErr.Status >= 500 && apiErr.Code == "InternalServerError" {
		slog.ErrorContext(c.Request.Context(), "request failed", "error", err,
			"method", c.Request.Method, "path", c.FullPath(), "opcRequestId", c.Writer.Header().Get("opc-request-id"))
	}
	if apiErr.RetryAfter > 0 {
		c.Header("retry-after", strconv.Itoa(apiErr.RetryAfter))
	}
	c.AbortWithStatusJSON(apiErr.Status, apiErr)
}
