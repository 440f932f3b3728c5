package filter

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// compileSeeds are valid and invalid expressions that reach every branch of the lexer and parser. The committed
// corpus under testdata/fuzz/FuzzCompile holds more, including invalid UTF-8.
var compileSeeds = []string{
	``,
	` `,
	`:region`,
	`NOT :region`,
	`:name = "Bob" AND NOT (:age > 40 OR :location = "Chicago")`,
	`hasPrefix(:name, "Bo") OR hasSuffix(:"order.id", "ob")`,
	`:a = -0.5 AND :b != 40.0 AND :c <= 1 AND :d >= 2 AND :e < 3 AND :f > 4`,
	`:q = "say \"hi\" \\ ok"`,
	`:"with space" = "x" OR :"ключ" = "значение"`,
	"\t:a\n=\r\n1\t AND(:b)AND:c",
	strings.Repeat("(", 32) + ":a" + strings.Repeat(")", 32),
	strings.Repeat("NOT ", 32) + ":a",
	strings.Repeat(":a OR ", 31) + ":a",
	`:name =`,
	`:age > "40"`,
	`hasPrefix(:name, 4)`,
	`(:a`,
	`:a)`,
	`:a and :b`,
	`:a = 01`,
	`:a = 1.`,
	`:1abc`,
	`:a = "\n"`,
}

// fuzzAttrSets are attribute maps every compiled fuzz input is evaluated against; the keys are the ones the seeds
// use, with values of every supported type.
var fuzzAttrSets = []map[string]any{
	nil,
	{},
	{"region": "x", "name": "Bob", "age": 40.0, "location": "Chicago", "order.id": "Bob"},
	{"a": 1.0, "b": "", "c": 1, "d": json.Number("2"), "e": -3.5, "f": 5.0, "q": `say "hi" \ ok`},
	{"a": "1", "b": true, "c": nil, "d": json.Number("x"), "e": math.NaN(), "f": math.Inf(1), "name": 4.0},
	{"with space": "x", "ключ": "значение", "1abc": 1.0, "": "empty"},
}

func FuzzCompile(f *testing.F) {
	for _, s := range compileSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := Compile(expr)
		if err != nil {
			checkCompileError(t, expr, err)
			return
		}
		require.LessOrEqual(t, len(expr), MaxLength)
		require.Equal(t, expr, flt.String())

		again, err := Compile(flt.String())
		require.NoError(t, err)
		canonical := flt.canonical()
		require.Equal(t, canonical, again.canonical())

		// The canonical form is a second, normalized spelling of the same tree. It may be longer than the source
		// (single spaces, re-quoted strings) but never deeper, so only the length limit is lifted.
		reparsed, err := compile(canonical, limits{length: math.MaxInt, depth: MaxDepth, terms: MaxTerms})
		require.NoError(t, err, "canonical form %q of %q", canonical, expr)
		require.Equal(t, canonical, reparsed.canonical())

		// Evaluation is linear: one node per source token at most, and no more terms than the limit.
		if flt.root != nil {
			nodes, terms := treeSize(flt.root)
			require.LessOrEqual(t, nodes, len(expr))
			require.LessOrEqual(t, terms, MaxTerms)
		}
		for _, attrs := range fuzzAttrSets {
			start := time.Now()
			got := flt.Match(attrs)
			require.Less(t, time.Since(start), time.Second, "Match is slow")
			require.Equal(t, got, reparsed.Match(attrs), "canonical form %q disagrees on %v", canonical, attrs)
			require.Equal(t, got, referenceEval(flt.root, attrs), "reference evaluation disagrees on %v", attrs)
		}
	})
}

func checkCompileError(t *testing.T, expr string, err error) {
	t.Helper()
	var ferr *Error
	require.True(t, errors.As(err, &ferr), "want *Error, got %T: %v", err, err)
	require.NotEmpty(t, ferr.Message)
	require.GreaterOrEqual(t, ferr.Column, 1)
	require.LessOrEqual(t, ferr.Column, utf8.RuneCountInString(expr)+1, "column past the end of %q", expr)
	require.Equal(t, "column "+strconv.Itoa(ferr.Column)+": "+ferr.Message, err.Error())
}

func FuzzMatch(f *testing.F) {
	seeds := []struct {
		expr string
		s    string
		n    float64
		mask uint8
	}{
		{`:name = "Bob" AND :age = 40`, "Bob", 40, 0b11},
		{`:name = "Bob" AND NOT (:age > 40 OR :region = "Chicago")`, "Bob", 41, 0b111},
		{`:age != 40 OR :a != "40"`, "", 40, 0b1010},
		{`:a = 40.0 OR :b = 40`, "", 40, 0b10000},
		{`:b >= -0.5 AND :b <= 0.5`, "x", -0.25, 0b10000},
		{`hasPrefix(:name, "Bo") AND hasSuffix(:region, "ob")`, "Bob", 0, 0b101},
		{`NOT hasPrefix(:"with space", "")`, "", 0, 0b1000000},
		{`:"order.id" = 7 AND :"order.id" < 7.5`, "", 7.4, 0b100000},
		{`:a > 1 OR :b < 1 OR NOT :a`, "1", math.NaN(), 0b10000000},
		{`:age = 9007199254740993`, "", 9007199254740992, 0b100010},
		{`NOT :name OR :name = ""`, "", 0, 0b1},
		{`:name = "日本" OR hasSuffix(:name, "🦀")`, "crab 🦀", 0, 0b1},
	}
	for _, s := range seeds {
		if _, err := Compile(s.expr); err != nil {
			f.Fatalf("seed %q must compile: %v", s.expr, err)
		}
		f.Add(s.expr, s.s, s.n, s.mask)
	}
	f.Fuzz(func(t *testing.T, expr, s string, n float64, mask uint8) {
		flt, err := Compile(expr)
		if err != nil {
			return // FuzzCompile covers invalid input
		}
		attrs := fuzzAttrs(s, n, mask)
		got := flt.Match(attrs)
		require.Equal(t, got, flt.Match(attrs), "Match is not deterministic")
		require.Equal(t, got, referenceEval(flt.root, attrs), "reference evaluation of %q disagrees on %v", expr, attrs)

		canonical := flt.canonical()
		reparsed, err := compile(canonical, limits{length: math.MaxInt, depth: MaxDepth, terms: MaxTerms})
		require.NoError(t, err)
		require.Equal(t, got, reparsed.Match(attrs), "canonical form %q disagrees on %v", canonical, attrs)

		// Wrapping the source in NOT ( … ) must negate it: a check on how the parser groups what it read.
		if flt.root == nil {
			return // an empty expression cannot be wrapped
		}
		negated, err := compile("NOT ("+expr+")", limits{length: math.MaxInt, depth: MaxDepth + 2, terms: MaxTerms})
		require.NoError(t, err)
		require.Equal(t, !got, negated.Match(attrs))
	})
}

// fuzzAttrs builds attributes over the keys the FuzzMatch seeds use; each bit of mask adds one, so the fuzzer
// explores absent keys, type mismatches and every numeric representation.
func fuzzAttrs(s string, n float64, mask uint8) map[string]any {
	attrs := map[string]any{}
	text := strconv.FormatFloat(n, 'f', -1, 64)
	if mask&1 != 0 {
		attrs["name"] = s
	}
	if mask&2 != 0 {
		attrs["age"] = n
	}
	if mask&4 != 0 {
		attrs["region"] = s
	}
	if mask&8 != 0 {
		attrs["a"] = text // a number spelled as a string: never equal to a number literal
	}
	if mask&16 != 0 {
		attrs["b"] = json.Number(text)
	}
	if mask&32 != 0 {
		if math.Abs(n) < 1<<62 {
			attrs["order.id"] = int64(n)
		} else {
			attrs["order.id"] = n
		}
	}
	if mask&64 != 0 {
		attrs["with space"] = s
	}
	if mask&128 != 0 {
		attrs["a"], attrs["b"] = n, s
	}
	return attrs
}

// treeSize counts the nodes and the leaf terms of a tree.
func treeSize(n node) (nodes, terms int) {
	switch n := n.(type) {
	case *orNode:
		return sumSizes(n.terms)
	case *andNode:
		return sumSizes(n.terms)
	case *notNode:
		nodes, terms = treeSize(n.operand)
		return nodes + 1, terms
	default:
		return 1, 1
	}
}

func sumSizes(ns []node) (nodes, terms int) {
	nodes = 1
	for _, n := range ns {
		a, b := treeSize(n)
		nodes, terms = nodes+a, terms+b
	}
	return nodes, terms
}

// referenceEval is a deliberately different implementation of DESIGN section 6's semantics (reflection instead of
// type switches, no short-circuit), used as an oracle for the evaluator.
func referenceEval(n node, attrs map[string]any) bool {
	switch n := n.(type) {
	case nil:
		return true
	case *orNode:
		anyTrue := false
		for _, t := range n.terms {
			anyTrue = referenceEval(t, attrs) || anyTrue
		}
		return anyTrue
	case *andNode:
		all := true
		for _, t := range n.terms {
			all = referenceEval(t, attrs) && all
		}
		return all
	case *notNode:
		return !referenceEval(n.operand, attrs)
	case *presenceNode:
		_, ok := attrs[n.key]
		return ok
	case *funcNode:
		v, ok := attrs[n.key]
		if !ok || reflect.TypeOf(v) != reflect.TypeFor[string]() {
			return false
		}
		s := reflect.ValueOf(v).String()
		if n.fn == fnHasPrefix {
			return len(s) >= len(n.arg) && s[:len(n.arg)] == n.arg
		}
		return len(s) >= len(n.arg) && s[len(s)-len(n.arg):] == n.arg
	case *compareNode:
		v, ok := attrs[n.key]
		if !ok {
			return false
		}
		if !n.isNumber {
			if reflect.TypeOf(v) != reflect.TypeFor[string]() {
				return false
			}
			return (reflect.ValueOf(v).String() == n.str) == (n.op == opEq)
		}
		x, ok := referenceNumber(v)
		if !ok {
			return false
		}
		c := 0 // three-way comparison, then read the operator off it
		if x < n.num {
			c = -1
		} else if x > n.num {
			c = 1
		}
		switch n.op {
		case opEq:
			return c == 0
		case opNe:
			return c != 0
		case opLt:
			return c < 0
		case opLe:
			return c <= 0
		case opGt:
			return c > 0
		default:
			return c >= 0
		}
	}
	panic("unknown node type " + reflect.TypeOf(n).String())
}

func referenceNumber(v any) (float64, bool) {
	var x float64
	if num, ok := v.(json.Number); ok {
		f, err := num.Float64()
		if err != nil {
			return 0, false
		}
		x = f
	} else {
		rv := reflect.ValueOf(v)
		switch {
		case rv.CanFloat():
			x = rv.Float()
		case rv.CanInt():
			x = float64(rv.Int())
		case rv.CanUint():
			x = float64(rv.Uint())
		default:
			return 0, false
		}
	}
	return x, !math.IsNaN(x)
}
