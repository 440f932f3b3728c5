// Package fault names the ways a ferry operation fails, in the domain's terms and free of any transport. The
// stores (persistence), the domain services (tenancy, iam, messaging) and the handlers return these errors;
// services/apierror is the one place that turns them into HTTP statuses and OCI error codes.
//
// A fault is a caller's fault (bad input, a missing or denied resource, a conflict, a limit) or a transient
// condition the caller can retry (Unavailable, TooManyRequests). Any other error is internal: it is logged and
// answered without its details.
package fault

import (
	"errors"
	"fmt"
)

// Kind classifies a fault. Each kind is one OCI error code (apierror maps it).
type Kind uint8

// The kinds, in the order of DESIGN section 4's error list. Each has a constructor of the same name without the
// prefix (InvalidParameter builds a KindInvalidParameter fault).
const (
	// KindInvalidParameter: a value is malformed or out of range. The message names the field.
	KindInvalidParameter Kind = iota + 1
	// KindMissingParameter: a required value is absent.
	KindMissingParameter
	// KindLimitExceeded: a count or size limit of the service or the tenancy would be exceeded.
	KindLimitExceeded
	// KindNotAuthenticated: the caller could not be identified.
	KindNotAuthenticated
	// KindNotFound: the resource does not exist, or the caller may not see it (the two are indistinguishable).
	KindNotFound
	// KindConflict: the request clashes with another resource or request (a name taken, a retry token reused).
	KindConflict
	// KindIncorrectState: the resource's lifecycle state or kind does not allow the change.
	KindIncorrectState
	// KindPreconditionFailed: the resource changed since the caller read it (if-match).
	KindPreconditionFailed
	// KindPayloadTooLarge: the request is larger than the service accepts.
	KindPayloadTooLarge
	// KindTooManyRequests: the caller must slow down; RetryAfter says when to try again.
	KindTooManyRequests
	// KindUnavailable: the service cannot answer now (the database is unreachable or aborted a conflicting
	// transaction); RetryAfter says when to try again.
	KindUnavailable
)

var kindNames = [...]string{
	KindInvalidParameter: "InvalidParameter", KindMissingParameter: "MissingParameter", KindLimitExceeded: "LimitExceeded",
	KindNotAuthenticated: "NotAuthenticated", KindNotFound: "NotFound", KindConflict: "Conflict",
	KindIncorrectState: "IncorrectState", KindPreconditionFailed: "PreconditionFailed",
	KindPayloadTooLarge: "PayloadTooLarge", KindTooManyRequests: "TooManyRequests", KindUnavailable: "Unavailable",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Error is a fault: its kind, a message for the caller that names the offending field, and for the transient
// kinds how many seconds to wait before retrying.
type Error struct {
	Kind       Kind
	Message    string
	RetryAfter int // seconds; TooManyRequests and Unavailable only
}

func (e *Error) Error() string { return e.Kind.String() + ": " + e.Message }

// New builds a fault of kind with a formatted message.
func New(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// ErrNotFound is the fault a store returns for a missing row; callers that know which field named it replace it
// with a message naming that field (see NotFoundIn).
var ErrNotFound = &Error{Kind: KindNotFound, Message: "the resource does not exist or you are not authorized to access it"}

// NotFoundIn replaces ErrNotFound with a fault that names field; other errors pass unchanged.
func NotFoundIn(field string, err error) error {
	if errors.Is(err, ErrNotFound) {
		return NotFound("%s: the resource does not exist or you are not authorized to access it", field)
	}
	return err
}

// As returns the fault in err's chain, or nil when err is not a fault.
func As(err error) *Error {
	var f *Error
	if errors.As(err, &f) {
		return f
	}
	return nil
}

// Is reports whether err is a fault of kind.
func Is(err error, kind Kind) bool {
	f := As(err)
	return f != nil && f.Kind == kind
}

// Constructors, one per kind.

// InvalidParameter: a value is malformed or out of range; the message names the field.
func InvalidParameter(format string, args ...any) *Error {
	return New(KindInvalidParameter, format, args...)
}

// MissingParameter: a required value is absent.
func MissingParameter(format string, args ...any) *Error {
	return New(KindMissingParameter, format, args...)
}

// LimitExceeded: a count or size limit would be exceeded.
func LimitExceeded(format string, args ...any) *Error { return New(KindLimitExceeded, format, args...) }

// NotAuthenticated: the caller could not be identified.
func NotAuthenticated(format string, args ...any) *Error {
	return New(KindNotAuthenticated, format, args...)
}

// NotFound: the resource does not exist or the caller may not see it.
func NotFound(format string, args ...any) *Error { return New(KindNotFound, format, args...) }

// Conflict: the request clashes with another resource or request.
func Conflict(format string, args ...any) *Error { return New(KindConflict, format, args...) }

// IncorrectState: the resource's state does not allow the change.
func IncorrectState(format string, args ...any) *Error {
	return New(KindIncorrectState, format, args...)
}

// PreconditionFailed: the resource changed since the caller read it.
func PreconditionFailed(format string, args ...any) *Error {
	return New(KindPreconditionFailed, format, args...)
}

// PayloadTooLarge: the request is larger than the service accepts.
func PayloadTooLarge(format string, args ...any) *Error {
	return New(KindPayloadTooLarge, format, args...)
}

// TooManyRequests: the caller must slow down and retry after the given seconds.
func TooManyRequests(retryAfter int, format string, args ...any) *Error {
	e := New(KindTooManyRequests, format, args...)
	e.RetryAfter = retryAfter
	return e
}

// Unavailable: the service cannot answer now; retry after the given seconds.
func Unavailable(retryAfter int, format string, args ...any) *Error {
	e := New(KindUnavailable, format, args...)
	e.RetryAfter = retryAfter
	return e
}
