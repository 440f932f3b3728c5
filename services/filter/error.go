package filter

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Error is a compile error. Column is 1-based and counts characters (not bytes) from the start of the
// expression, line breaks included, so a client can point at the offending character in what the user typed.
// Errors about a token point at its first character; errors about something missing point where it was expected
// (one past the last character at the end of the expression).
type Error struct {
	Column  int
	Message string
}

// Error formats the error as DESIGN section 6 shows it, e.g. "column 14: expected a literal after '='"; the API
// layer prefixes the parameter name.
func (e *Error) Error() string {
	return "column " + strconv.Itoa(e.Column) + ": " + e.Message
}

// errorAt builds an *Error for the byte offset off of src.
func errorAt(src string, off int, format string, args ...any) *Error {
	return &Error{Column: columnOf(src, off), Message: fmt.Sprintf(format, args...)}
}

// columnOf converts a byte offset into the 1-based character column the contract promises. Offsets inside a
// multi-byte character are moved back to its first byte, so the column names the whole character.
func columnOf(src string, off int) int {
	off = min(max(off, 0), len(src))
	for off > 0 && off < len(src) && !utf8.RuneStart(src[off]) {
		off--
	}
	return utf8.RuneCountInString(src[:off]) + 1
}
