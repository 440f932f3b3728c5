package persistence

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/ferry-mq/ferry/fault"
)

// TextProblem says why s cannot be stored in a PostgreSQL text column of a UTF8 database ("" when it can): the
// database refuses invalid UTF-8 and NUL characters with 22021 (invalid byte sequence), which would otherwise
// surface as a 500. The HTTP edge applies it to every parameter and JSON string (services/httpapi), and the page
// tokens to what they decode to, so that no text reaches a statement that the database would refuse.
func TextProblem(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "must not contain NUL characters"
	}
	return ""
}

// DecodePageToken decodes an opaque page token (base64url, as the lists encode them). A token that does not
// decode, or decodes to text the database cannot hold (a forged or damaged token such as "AAAA", three NULs),
// is InvalidParameter naming the page parameter.
func DecodePageToken(token string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || (token != "" && len(raw) == 0) || TextProblem(string(raw)) != "" {
		return nil, fault.InvalidParameter("page: not a page token of this list; pass the opc-next-page header back unchanged")
	}
	return raw, nil
}
