// Package apierror is ferry's one mapping from failures to HTTP: every error a handler returns becomes an
// OCI-style {"code","message"} body with the matching status. Unknown errors become a 500 whose message never
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
)

// Error is an API error: an HTTP status, an OCI error code and a message that names the offending field.
type Error struct {
	Status     int    `json:"-"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	RetryAfter int    `json:"-"` // seconds, for 429 and 503
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New builds an Error.
func New(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Constructors for the codes of DESIGN section 4.
func InvalidParameter(format string, args ...any) *Error {
	return New(http.StatusBadRequest, "InvalidParameter", format, args...)
}
func MissingParameter(format string, args ...any) *Error {
	return New(http.StatusBadRequest, "MissingParameter", format, args...)
}
func LimitExceeded(format string, args ...any) *Error {
	return New(http.StatusBadRequest, "LimitExceeded", format, args...)
}
func NotAuthenticated(format string, args ...any) *Error {
	return New(http.StatusUnauthorized, "NotAuthenticated", format, args...)
}

// NotFound is also the answer to a denied request: the two are indistinguishable by design.
func NotFound(format string, args ...any) *Error {
	return New(http.StatusNotFound, "NotAuthorizedOrNotFound", format, args...)
}
func Conflict(format string, args ...any) *Error {
	return New(http.StatusConflict, "Conflict", format, args...)
}
func IncorrectState(format string, args ...any) *Error {
	return New(http.StatusConflict, "IncorrectState", format, args...)
}
func NoEtagMatch(format string, args ...any) *Error {
	return New(http.StatusPreconditionFailed, "NoEtagMatch", format, args...)
}
func PayloadTooLarge(format string, args ...any) *Error {
	return New(http.StatusRequestEntityTooLarge, "PayloadTooLarge", format, args...)
}
func TooManyRequests(retryAfter int, format string, args ...any) *Error {
	e := New(http.StatusTooManyRequests, "TooManyRequests", format, args...)
	e.RetryAfter = retryAfter
	return e
}
func ServiceUnavailable(retryAfter int, format string, args ...any) *Error {
	e := New(http.StatusServiceUnavailable, "ServiceUnavailable", format, args...)
	e.RetryAfter = retryAfter
	return e
}

// ErrNotFound is the sentinel that stores return for a missing row; it answers 404.
var ErrNotFound = errors.New("not found")

// From converts any error to an *Error (500 for the unknown ones).
func From(err error) *Error {
	var apiErr *Error
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.Is(err, ErrNotFound):
		return NotFound("the resource does not exist or you are not authorized to access it")
	case errors.Is(err, context.Canceled):
		// The caller went away (or the server is stopping): nobody reads this answer; it is not a server fault.
		return New(http.StatusServiceUnavailable, "ServiceUnavailable", "the request was cancelled")
	default:
		return New(http.StatusInternalServerError, "InternalServerError", "internal error; quote the opc-request-id when reporting it")
	}
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
