package wire

import "unicode/utf8"

// StringProblem says why the source text of a JSON string (quotes included; what precedes it — whitespace, ','
// or ':' — may be too) cannot be stored in a PostgreSQL text column ("" when it can): raw bytes that are not
// UTF-8, \u0000, and \uD800–\uDFFF escapes that are not a high surrogate followed at once by a low one.
// encoding/json would turn the bytes and the surrogates into U+FFFD without a word: the validator refuses them
// (httpapi's text rule), and the fast decoders leave such strings to it.
func StringProblem(src []byte) string {
	if !utf8.Valid(src) {
		return "must be valid UTF-8"
	}
	for i := 0; i < len(src); i++ {
		if src[i] != '\\' || i+1 >= len(src) {
			continue
		}
		if src[i+1] != 'u' {
			i++ // \\, \", \n …: the escaped character is not the start of an escape
			continue
		}
		r, ok := hex4(src[i+2:])
		switch {
		case !ok:
			return "" // not JSON: the validator words that
		case r == 0:
			return "must not contain NUL characters"
		case r >= 0xD800 && r < 0xDC00:
			if len(src) < i+12 || src[i+6] != '\\' || src[i+7] != 'u' {
				return "must be valid UTF-8 (an escaped surrogate without its pair)"
			}
			if low, ok := hex4(src[i+8:]); !ok || low < 0xDC00 || low > 0xDFFF {
				return "must be valid UTF-8 (an escaped surrogate without its pair)"
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return "must be valid UTF-8 (an escaped surrogate without its pair)"
		default:
			i += 5
		}
	}
	return ""
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
