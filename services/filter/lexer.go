package filter

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokKey
	tokString
	tokNumber
	tokLParen
	tokRParen
	tokComma
	tokCmp
	tokAnd
	tokOr
	tokNot
	tokFunc
	// tokWord is any other identifier. It is never valid, but keeping it as a token lets the parser explain the
	// mistake in context (a lower-case keyword, a key without ':', an unknown function).
	tokWord
)

type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

var cmpOpText = [...]string{opEq: "=", opNe: "!=", opLt: "<", opLe: "<=", opGt: ">", opGe: ">="}

func (op cmpOp) String() string { return cmpOpText[op] }

// ordering reports whether op needs a number literal.
func (op cmpOp) ordering() bool { return op >= opLt }

type funcKind uint8

const (
	fnHasPrefix funcKind = iota
	fnHasSuffix
)

var funcNames = [...]string{fnHasPrefix: "hasPrefix", fnHasSuffix: "hasSuffix"}

func (fn funcKind) String() string { return funcNames[fn] }

// token is one lexeme. off and end are byte offsets into the source; they become columns only when an error is
// reported, so the happy path never counts characters.
type token struct {
	kind     tokenKind
	off, end int
	text     string  // tokKey: the key name; tokString: the unescaped value; tokWord: the word
	num      float64 // tokNumber
	op       cmpOp   // tokCmp
	fn       funcKind
	// call is set on a tokWord followed by '(', so an unknown function gets its own message.
	call bool
}

// lexer hands out tokens one at a time, so the parser reports the leftmost error whether it is lexical or
// syntactic.
type lexer struct {
	src string
	off int
}

func isSpace(c byte) bool      { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isIdentStart(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) || c == '-' }

// isIdent reports whether s can be written as a key without quotes.
func isIdent(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

func (lx *lexer) skipSpace() {
	for lx.off < len(lx.src) && isSpace(lx.src[lx.off]) {
		lx.off++
	}
}

func (lx *lexer) errorAt(off int, format string, args ...any) *Error {
	return errorAt(lx.src, off, format, args...)
}

func (lx *lexer) next() (token, error) {
	lx.skipSpace()
	start := lx.off
	if start >= len(lx.src) {
		return token{kind: tokEOF, off: start, end: start}, nil
	}
	simple := func(kind tokenKind, size int) (token, error) {
		lx.off = start + size
		return token{kind: kind, off: start, end: lx.off}, nil
	}
	cmp := func(op cmpOp, size int) (token, error) {
		lx.off = start + size
		return token{kind: tokCmp, off: start, end: lx.off, op: op}, nil
	}
	followedBy := func(c byte) bool { return start+1 < len(lx.src) && lx.src[start+1] == c }

	switch c := lx.src[start]; {
	case c == '(':
		return simple(tokLParen, 1)
	case c == ')':
		return simple(tokRParen, 1)
	case c == ',':
		return simple(tokComma, 1)
	case c == '=':
		return cmp(opEq, 1)
	case c == '!':
		if !followedBy('=') {
			return token{}, lx.errorAt(start+1, "expected '=' after '!'")
		}
		return cmp(opNe, 2)
	case c == '<':
		if followedBy('=') {
			return cmp(opLe, 2)
		}
		return cmp(opLt, 1)
	case c == '>':
		if followedBy('=') {
			return cmp(opGe, 2)
		}
		return cmp(opGt, 1)
	case c == ':':
		return lx.key(start)
	case c == '"':
		value, err := lx.quoted()
		if err != nil {
			return token{}, err
		}
		return token{kind: tokString, off: start, end: lx.off, text: value}, nil
	case c == '-' || isDigit(c):
		return lx.number(start)
	case isIdentStart(c):
		return lx.word(start), nil
	default:
		r, size := utf8.DecodeRuneInString(lx.src[start:])
		if r == utf8.RuneError && size == 1 {
			return token{}, lx.errorAt(start, "invalid UTF-8")
		}
		return token{}, lx.errorAt(start, "unexpected character %q", r)
	}
}

// key lexes `:ident` or `:"quoted"` starting at the colon.
func (lx *lexer) key(start int) (token, error) {
	i := start + 1
	var name string
	switch {
	case i < len(lx.src) && lx.src[i] == '"':
		lx.off = i
		var err error
		if name, err = lx.quoted(); err != nil {
			return token{}, err
		}
	case i < len(lx.src) && isIdentStart(lx.src[i]):
		lx.off = lx.scanIdent(i)
		name = lx.src[i:lx.off]
	case i < len(lx.src) && isIdentChar(lx.src[i]):
		// A digit or '-' first: the user meant a key but it has to be quoted; show how.
		end := lx.scanIdent(i)
		return token{}, lx.errorAt(i, "a key name cannot start with '%c': quote it, as in :%q", lx.src[i], lx.src[i:end])
	default:
		return token{}, lx.errorAt(i, "expected a key name after ':'")
	}
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return token{}, lx.errorAt(start, "a key must not be empty")
	case n > MaxKeyLength:
		return token{}, lx.errorAt(start, "a key must be at most %d characters", MaxKeyLength)
	}
	return token{kind: tokKey, off: start, end: lx.off, text: name}, nil
}

func (lx *lexer) scanIdent(i int) int {
	for i < len(lx.src) && isIdentChar(lx.src[i]) {
		i++
	}
	return i
}

// quoted lexes a double-quoted string starting at lx.off and returns its unescaped value. It allocates only when
// the string contains escapes.
func (lx *lexer) quoted() (string, error) {
	start := lx.off
	var buf []byte
	i, segment := start+1, start+1
	for {
		if i >= len(lx.src) {
			return "", lx.errorAt(start, "unterminated string")
		}
		switch c := lx.src[i]; {
		case c == '"':
			lx.off = i + 1
			if buf == nil {
				return lx.src[segment:i], nil
			}
			return string(append(buf, lx.src[segment:i]...)), nil
		case c == '\\':
			if i+1 >= len(lx.src) {
				return "", lx.errorAt(start, "unterminated string")
			}
			if e := lx.src[i+1]; e != '"' && e != '\\' {
				r, size := utf8.DecodeRuneInString(lx.src[i+1:])
				switch {
				case r == utf8.RuneError && size == 1:
					return "", lx.errorAt(i+1, "invalid UTF-8 in a string")
				case unicode.IsPrint(r):
					return "", lx.errorAt(i, `invalid escape '\%c' in a string (only \" and \\ are allowed)`, r)
				default:
					return "", lx.errorAt(i, `invalid escape in a string (only \" and \\ are allowed)`)
				}
			}
			buf = append(buf, lx.src[segment:i]...)
			buf = append(buf, lx.src[i+1])
			i += 2
			segment = i
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(lx.src[i:])
			if r == utf8.RuneError && size == 1 {
				return "", lx.errorAt(i, "invalid UTF-8 in a string")
			}
			i += size
		}
	}
}

// number lexes -?digits[.digits]. It rejects leading zeros (see the package documentation) and a number run into
// letters or another '.', so `1e5`, `1.2.3` and `12abc` are errors rather than a number followed by garbage.
func (lx *lexer) number(start int) (token, error) {
	i := start
	if lx.src[i] == '-' {
		i++
	}
	if i >= len(lx.src) || !isDigit(lx.src[i]) {
		return token{}, lx.errorAt(i, "expected a digit after '-'")
	}
	digits := i
	for i < len(lx.src) && isDigit(lx.src[i]) {
		i++
	}
	if lx.src[digits] == '0' && i-digits > 1 {
		return token{}, lx.errorAt(start, "a number must not have leading zeros")
	}
	if i < len(lx.src) && lx.src[i] == '.' {
		i++
		if i >= len(lx.src) || !isDigit(lx.src[i]) {
			return token{}, lx.errorAt(i, "expected a digit after '.'")
		}
		for i < len(lx.src) && isDigit(lx.src[i]) {
			i++
		}
	}
	if i < len(lx.src) && (isIdentChar(lx.src[i]) || lx.src[i] == '.') {
		return token{}, lx.errorAt(i, "unexpected '%c' after a number", lx.src[i])
	}
	// The grammar admits no exponent and MaxLength caps the digits, so ParseFloat cannot overflow for an
	// accepted expression; the check guards tests that lift MaxLength.
	value, err := strconv.ParseFloat(lx.src[start:i], 64)
	if err != nil {
		return token{}, lx.errorAt(start, "number out of range")
	}
	lx.off = i
	return token{kind: tokNumber, off: start, end: i, num: value}, nil
}

// word lexes an identifier outside a key: a keyword, a function name or a mistake for the parser to explain.
func (lx *lexer) word(start int) token {
	end := lx.scanIdent(start)
	lx.off = end
	t := token{kind: tokWord, off: start, end: end, text: lx.src[start:end]}
	switch t.text {
	case "AND":
		t.kind = tokAnd
	case "OR":
		t.kind = tokOr
	case "NOT":
		t.kind = tokNot
	case "hasPrefix":
		t.kind, t.fn = tokFunc, fnHasPrefix
	case "hasSuffix":
		t.kind, t.fn = tokFunc, fnHasSuffix
	default:
		rest := strings.TrimLeft(lx.src[end:], " \t\r\n")
		t.call = strings.HasPrefix(rest, "(")
	}
	return t
}
