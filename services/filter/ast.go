package filter

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// node is a compiled expression. eval must not allocate: it runs for every published message and every consumer
// group with a filter. appendTo renders the canonical form (see Filter.canonical).
type node interface {
	eval(attrs map[string]any) bool
	appendTo(b []byte) []byte
}

// orNode is true when any term is; chains are flattened so `a OR b OR c` is one node and evaluation
// short-circuits left to right.
type orNode struct{ terms []node }

func (n *orNode) add(t node) {
	if inner, ok := t.(*orNode); ok {
		n.terms = append(n.terms, inner.terms...)
		return
	}
	n.terms = append(n.terms, t)
}

func (n *orNode) eval(attrs map[string]any) bool {
	for _, t := range n.terms {
		if t.eval(attrs) {
			return true
		}
	}
	return false
}

func (n *orNode) appendTo(b []byte) []byte {
	for i, t := range n.terms {
		if i > 0 {
			b = append(b, " OR "...)
		}
		b = t.appendTo(b) // a term is never an orNode (flattened), so it needs no parentheses
	}
	return b
}

// andNode is true when every term is; flattened like orNode.
type andNode struct{ terms []node }

func (n *andNode) add(t node) {
	if inner, ok := t.(*andNode); ok {
		n.terms = append(n.terms, inner.terms...)
		return
	}
	n.terms = append(n.terms, t)
}

func (n *andNode) eval(attrs map[string]any) bool {
	for _, t := range n.terms {
		if !t.eval(attrs) {
			return false
		}
	}
	return true
}

func (n *andNode) appendTo(b []byte) []byte {
	for i, t := range n.terms {
		if i > 0 {
			b = append(b, " AND "...)
		}
		b = appendOperand(b, t)
	}
	return b
}

type notNode struct{ operand node }

func (n *notNode) eval(attrs map[string]any) bool { return !n.operand.eval(attrs) }

func (n *notNode) appendTo(b []byte) []byte {
	return appendOperand(append(b, "NOT "...), n.operand)
}

// appendOperand parenthesizes an operand of AND or NOT only where precedence requires it.
func appendOperand(b []byte, t node) []byte {
	switch t.(type) {
	case *orNode, *andNode:
		b = append(b, '(')
		b = t.appendTo(b)
		return append(b, ')')
	}
	return t.appendTo(b)
}

// presenceNode is a bare key: true when the attribute exists, whatever its value.
type presenceNode struct{ key string }

func (n *presenceNode) eval(attrs map[string]any) bool {
	_, ok := attrs[n.key]
	return ok
}

func (n *presenceNode) appendTo(b []byte) []byte { return appendKey(b, n.key) }

// compareNode compares an attribute with a literal whose type was fixed at compile time: a number literal only
// ever matches number attributes and a string literal string attributes.
type compareNode struct {
	key      string
	op       cmpOp
	isNumber bool
	num      float64
	str      string
}

func (n *compareNode) eval(attrs map[string]any) bool {
	v, ok := attrs[n.key]
	if !ok {
		return false
	}
	if n.isNumber {
		x, ok := numberValue(v)
		if !ok {
			return false
		}
		switch n.op {
		case opEq:
			return x == n.num
		case opNe:
			return x != n.num
		case opLt:
			return x < n.num
		case opLe:
			return x <= n.num
		case opGt:
			return x > n.num
		default:
			return x >= n.num
		}
	}
	s, ok := v.(string)
	if !ok {
		return false
	}
	if n.op == opEq {
		return s == n.str
	}
	return s != n.str // the parser allows only = and != with a string literal
}

func (n *compareNode) appendTo(b []byte) []byte {
	b = appendKey(b, n.key)
	b = append(b, ' ')
	b = append(b, n.op.String()...)
	b = append(b, ' ')
	if n.isNumber {
		// The shortest decimal that reads back as the same float64; 'f' because the grammar has no exponent.
		return strconv.AppendFloat(b, n.num, 'f', -1, 64)
	}
	return appendString(b, n.str)
}

// funcNode is hasPrefix or hasSuffix; false on anything but a string attribute.
type funcNode struct {
	fn  funcKind
	key string
	arg string
}

func (n *funcNode) eval(attrs map[string]any) bool {
	s, ok := attrs[n.key].(string)
	if !ok {
		return false
	}
	if n.fn == fnHasPrefix {
		return strings.HasPrefix(s, n.arg)
	}
	return strings.HasSuffix(s, n.arg)
}

func (n *funcNode) appendTo(b []byte) []byte {
	b = append(b, n.fn.String()...)
	b = append(b, '(')
	b = appendKey(b, n.key)
	b = append(b, ", "...)
	b = appendString(b, n.arg)
	return append(b, ')')
}

func appendKey(b []byte, key string) []byte {
	b = append(b, ':')
	if isIdent(key) {
		return append(b, key...)
	}
	return appendString(b, key)
}

// appendString quotes s with the language's only two escapes.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// numberValue reads a number attribute. float64 is what encoding/json produces and comes first; the other cases
// accept attributes built in Go. NaN is treated as "not a number" so that every comparison with it is false,
// != included, like any other mismatch.
func numberValue(v any) (float64, bool) {
	var x float64
	switch n := v.(type) {
	case float64:
		x = n
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int16:
		return float64(n), true
	case int8:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint8:
		return float64(n), true
	case float32:
		x = float64(n)
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, false
		}
		x = f
	default:
		return 0, false
	}
	return x, !math.IsNaN(x)
}
