// Package filter implements ferry's consumer-group filter language (DESIGN section 6): a small boolean language
// over a message's attributes, such as
//
//	:name = "Bob" AND NOT (:age > 40 OR :location = "Chicago")
//
// A filter is compiled once, when a consumer group is created or updated, and then evaluated for every published
// message, so Compile does all the work it can (parsing numbers, resolving operators, flattening AND/OR chains)
// and Match neither allocates nor backtracks. The size limits below bound both the cost of compiling an
// expression a client sent and the cost of evaluating it against every message.
//
// # Semantics
//
//   - Precedence, from tightest: parentheses, NOT, AND, OR. NOT applies to the whole primary that follows it,
//     so `NOT :age > 40` means `NOT (:age > 40)` and `NOT hasPrefix(:k, "x")` negates the call.
//   - A bare key (`:region`) tests presence. Every comparison and function on an absent attribute is false, so
//     `NOT :region` is the way to select messages without `region`.
//   - `=` and `!=` compare a string attribute with a string literal or a number attribute with a number literal
//     (numerically: `40 = 40.0`). On mismatched types both are false: `!=` means "present, of the literal's type,
//     and different", never "not equal to".
//   - `<`, `<=`, `>`, `>=` take a number literal only (a string literal is a compile error); hasPrefix and
//     hasSuffix take a string literal only (a number is a compile error) and are false on number attributes.
//   - Keywords (AND, OR, NOT) are upper case and hasPrefix/hasSuffix are spelled exactly so; keys and values are
//     case-sensitive.
//   - Numbers are `-?digits[.digits]` without leading zeros (`0`, `0.5` and `-0.25` are fine, `01` is an error):
//     `:zip = 02134` would otherwise silently mean 2134 when the author almost certainly meant the string
//     "02134".
//   - A key is written `:ident` (ident = [A-Za-z_][A-Za-z0-9_-]*) or `:"any string"`, with no space after the
//     colon; keys are 1..64 characters.
//   - Strings are double-quoted UTF-8 with two escapes, `\"` and `\\`; any other backslash sequence is an error.
//   - Whitespace (space, tab, CR, LF) between tokens is free.
//
// # Attribute values
//
// Match reads attributes as map[string]any. Strings are string; numbers are float64 (what encoding/json
// produces), and also any Go integer or float type and json.Number (compared as float64, so integers beyond
// 2^53 lose precision exactly as they do in JSON). NaN and values of any other type (bool, nil, slices…) are
// present but compare false with everything.
package filter

// Limits on an expression. They are part of the API contract (DESIGN section 6): an expression that exceeds one
// is rejected by Compile with an *Error naming the column where the limit was crossed.
const (
	// MaxLength is the longest accepted expression, in bytes (the unit storage and request limits use). A longer
	// expression is rejected with the column of the character that crosses the limit.
	MaxLength = 256
	// MaxDepth bounds nesting: every '(' and every NOT opens one level. It keeps the recursive-descent parser's
	// stack small whatever the input.
	MaxDepth = 32
	// MaxTerms bounds the number of key tests (presence, comparison or function call) in an expression, so the
	// cost of evaluating a filter per message stays small and predictable. It is set below what MaxLength alone
	// allows (a 256-byte expression can hold about 51 terms, as in `:a OR:b OR:c …`) so that the limit still
	// holds if MaxLength is ever raised.
	MaxTerms = 32
	// MaxKeyLength is the longest attribute key, in characters (DESIGN section 6: keys are 1..64 characters).
	MaxKeyLength = 64
)

// Filter is a compiled filter expression. It is immutable and safe for concurrent use by any number of
// goroutines. A nil *Filter, like the one compiled from an empty expression, matches every message.
type Filter struct {
	source string
	root   node // nil: the expression was empty and matches everything
}

// Compile parses and checks expr. The empty (or all-whitespace) expression compiles to a filter that matches
// everything. A malformed expression returns an *Error whose Column points at the offending character.
func Compile(expr string) (*Filter, error) {
	return compile(expr, defaultLimits)
}

// limits are the bounds the parser enforces. Compile always uses defaultLimits; tests raise them to re-parse
// canonical forms that may be longer than their sources.
type limits struct {
	length, depth, terms int
}

var defaultLimits = limits{length: MaxLength, depth: MaxDepth, terms: MaxTerms}

func compile(expr string, lim limits) (*Filter, error) {
	root, err := parse(expr, lim)
	if err != nil {
		return nil, err
	}
	return &Filter{source: expr, root: root}, nil
}

// Match reports whether a message with the given attributes passes the filter. It does not allocate and does
// not modify attrs.
func (f *Filter) Match(attrs map[string]any) bool {
	if f == nil || f.root == nil {
		return true
	}
	return f.root.eval(attrs)
}

// String returns the expression the filter was compiled from, exactly as given, so that it can be stored and
// shown back to the user unchanged.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	return f.source
}

// canonical renders the filter in a normalized form (single spaces, minimal parentheses, flattened AND/OR
// chains). Compiling the canonical form yields the same tree, which the fuzz tests use as a parser oracle.
func (f *Filter) canonical() string {
	if f == nil || f.root == nil {
		return ""
	}
	return string(f.root.appendTo(nil))
}
