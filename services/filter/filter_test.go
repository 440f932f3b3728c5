package filter

import (
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

type attrs = map[string]any

// matchCase is an expression with attribute sets that must match and sets that must not.
type matchCase struct {
	expr    string
	match   []attrs
	noMatch []attrs
}

func runMatchCases(t *testing.T, cases []matchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			f, err := Compile(tc.expr)
			require.NoError(t, err)
			require.Equal(t, tc.expr, f.String())
			require.NotEmpty(t, tc.match, "every case needs a matching attribute set")
			require.NotEmpty(t, tc.noMatch, "every case needs a non-matching attribute set")
			for _, a := range tc.match {
				require.True(t, f.Match(a), "%s should match %v", tc.expr, a)
			}
			for _, a := range tc.noMatch {
				require.False(t, f.Match(a), "%s should not match %v", tc.expr, a)
			}
		})
	}
}

// TestOCIExamples covers every example of the OCI Queue fanout documentation, plus ferry's own billing example.
func TestOCIExamples(t *testing.T) {
	t.Parallel()
	runMatchCases(t, []matchCase{
		{
			expr:    `:region`,
			match:   []attrs{{"region": "us-ashburn-1"}, {"region": ""}, {"region": 1.0}, {"region": nil}},
			noMatch: []attrs{{}, nil, {"Region": "us-ashburn-1"}, {"regions": "x"}},
		},
		{
			expr:    `NOT :region`,
			match:   []attrs{{}, nil, {"Region": "x"}, {"name": "Bob"}},
			noMatch: []attrs{{"region": "x"}, {"region": ""}, {"region": 2.0}},
		},
		{
			expr:    `:name = "Bob"`,
			match:   []attrs{{"name": "Bob"}, {"name": "Bob", "age": 40.0}},
			noMatch: []attrs{{"name": "bob"}, {"name": "Bobby"}, {"name": " Bob"}, {}, {"name": 1.0}, {"Name": "Bob"}},
		},
		{
			expr:    `:name != "Bob"`,
			match:   []attrs{{"name": "Alice"}, {"name": "bob"}, {"name": ""}},
			noMatch: []attrs{{"name": "Bob"}, {}, {"name": 40.0}, {"other": "x"}},
		},
		{
			expr:    `hasPrefix(:name, "Bo")`,
			match:   []attrs{{"name": "Bob"}, {"name": "Bo"}, {"name": "Boston"}},
			noMatch: []attrs{{"name": "bob"}, {"name": "B"}, {"name": "aBo"}, {"name": ""}, {}, {"name": 40.0}},
		},
		{
			expr:    `hasSuffix(:name, "ob")`,
			match:   []attrs{{"name": "Bob"}, {"name": "ob"}, {"name": "Rob"}},
			noMatch: []attrs{{"name": "Bo"}, {"name": "BOB"}, {"name": "obi"}, {}, {"name": 1.0}},
		},
		{
			expr:    `NOT hasPrefix(:name, "Bo")`,
			match:   []attrs{{"name": "Alice"}, {}, {"name": 40.0}},
			noMatch: []attrs{{"name": "Bob"}, {"name": "Bo"}},
		},
		{
			expr: `:age = 40`,
			match: []attrs{
				{"age": 40.0}, {"age": 40}, {"age": int64(40)}, {"age": uint8(40)}, {"age": float32(40)},
				{"age": json.Number("40")}, {"age": json.Number("40.0")}, {"age": json.Number("4e1")},
			},
			noMatch: []attrs{{"age": "40"}, {"age": 41.0}, {"age": 40.5}, {}, {"age": json.Number("x")}, {"age": true}},
		},
		{
			expr:    `:age != 40`,
			match:   []attrs{{"age": 41.0}, {"age": 39.9}, {"age": -40.0}, {"age": 0}},
			noMatch: []attrs{{"age": 40.0}, {"age": 40}, {"age": "41"}, {}, {"age": nil}, {"age": math.NaN()}},
		},
		{
			expr:    `:age > 40`,
			match:   []attrs{{"age": 41.0}, {"age": 40.001}, {"age": math.Inf(1)}},
			noMatch: []attrs{{"age": 40.0}, {"age": 39.0}, {"age": "50"}, {}},
		},
		{
			expr:    `:age >= 40`,
			match:   []attrs{{"age": 40.0}, {"age": 41}},
			noMatch: []attrs{{"age": 39.99}, {"age": "40"}, {}},
		},
		{
			expr:    `:age < 40`,
			match:   []attrs{{"age": 39.0}, {"age": -1}, {"age": math.Inf(-1)}},
			noMatch: []attrs{{"age": 40.0}, {"age": 100.0}, {"age": "1"}, {}},
		},
		{
			expr:    `:age <= 40`,
			match:   []attrs{{"age": 40.0}, {"age": 0.0}},
			noMatch: []attrs{{"age": 40.01}, {"age": "0"}, {}},
		},
		{
			expr:    `:name = "Bob" AND :age = 40`,
			match:   []attrs{{"name": "Bob", "age": 40.0}, {"name": "Bob", "age": 40.0, "x": "y"}},
			noMatch: []attrs{{"name": "Bob", "age": 41.0}, {"name": "Alice", "age": 40.0}, {"name": "Bob"}, {"age": 40.0}},
		},
		{
			expr:    `:name = "Bob" OR :age = 40`,
			match:   []attrs{{"name": "Bob"}, {"age": 40.0}, {"name": "Bob", "age": 40.0}, {"name": "Alice", "age": 40.0}},
			noMatch: []attrs{{"name": "Alice", "age": 41.0}, {}, {"name": 40.0, "age": "Bob"}},
		},
		{
			expr:    `:name = "Bob" AND NOT :age`,
			match:   []attrs{{"name": "Bob"}, {"name": "Bob", "Age": 1.0}},
			noMatch: []attrs{{"name": "Bob", "age": 40.0}, {"name": "Alice"}, {}},
		},
		{
			expr: `:name = "Bob" AND NOT (:age > 40 OR :location = "Chicago")`,
			match: []attrs{
				{"name": "Bob"}, {"name": "Bob", "age": 40.0, "location": "Boston"}, {"name": "Bob", "age": "99"},
			},
			noMatch: []attrs{
				{"name": "Bob", "age": 41.0}, {"name": "Bob", "location": "Chicago"}, {"name": "Alice"},
				{"name": "Bob", "age": 50.0, "location": "Boston"},
			},
		},
		{
			expr:    `:"order.id" = 7`,
			match:   []attrs{{"order.id": 7.0}, {"order.id": 7}},
			noMatch: []attrs{{"order.id": "7"}, {"order": 7.0}, {"orderid": 7.0}, {"order.id": 8.0}},
		},
		{
			expr:    `:"with space" = "x"`,
			match:   []attrs{{"with space": "x"}},
			noMatch: []attrs{{"with space": "y"}, {"withspace": "x"}, {"with space": 1.0}},
		},
		{
			expr:    `:team = "exec-expenses"`,
			match:   []attrs{{"team": "exec-expenses"}},
			noMatch: []attrs{{"team": "exec"}, {"team": "Exec-Expenses"}, {"team": "exec-expenses "}, {}},
		},
	})
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	runMatchCases(t, []matchCase{
		// AND binds tighter than OR: a OR (b AND c), not (a OR b) AND c.
		{
			expr:    `:a OR :b AND :c`,
			match:   []attrs{{"a": 1.0}, {"b": 1.0, "c": 1.0}},
			noMatch: []attrs{{"b": 1.0}, {"c": 1.0}, {}},
		},
		{
			expr:    `:a AND :b OR :c`,
			match:   []attrs{{"c": 1.0}, {"a": 1.0, "b": 1.0}},
			noMatch: []attrs{{"a": 1.0}, {"b": 1.0}, {}},
		},
		{
			expr:    `:a AND :b OR :c AND :d`,
			match:   []attrs{{"a": 1.0, "b": 1.0}, {"c": 1.0, "d": 1.0}},
			noMatch: []attrs{{"a": 1.0, "d": 1.0}, {"b": 1.0, "c": 1.0}},
		},
		// NOT binds tighter than AND: (NOT a) AND b, not NOT (a AND b).
		{
			expr:    `NOT :a AND :b`,
			match:   []attrs{{"b": 1.0}},
			noMatch: []attrs{{}, {"a": 1.0, "b": 1.0}, {"a": 1.0}},
		},
		{
			expr:    `NOT :a OR :b`,
			match:   []attrs{{}, {"a": 1.0, "b": 1.0}},
			noMatch: []attrs{{"a": 1.0}},
		},
		{
			expr:    `NOT (:a AND :b)`,
			match:   []attrs{{}, {"a": 1.0}},
			noMatch: []attrs{{"a": 1.0, "b": 1.0}},
		},
		{
			expr:    `(:a OR :b) AND :c`,
			match:   []attrs{{"a": 1.0, "c": 1.0}, {"b": 1.0, "c": 1.0}},
			noMatch: []attrs{{"a": 1.0}, {"c": 1.0}},
		},
		{
			expr:    `NOT NOT :a`,
			match:   []attrs{{"a": 1.0}},
			noMatch: []attrs{{}},
		},
		// NOT negates the whole comparison, not just the key.
		{
			expr:    `NOT :age > 40`,
			match:   []attrs{{}, {"age": 30.0}, {"age": "99"}},
			noMatch: []attrs{{"age": 41.0}},
		},
		{
			expr:    `NOT hasSuffix(:name, "ob") AND :name`,
			match:   []attrs{{"name": "Alice"}, {"name": 1.0}},
			noMatch: []attrs{{"name": "Bob"}, {}},
		},
		{
			expr:    `((((:a))))`,
			match:   []attrs{{"a": "x"}},
			noMatch: []attrs{{}},
		},
	})
}

func TestTyping(t *testing.T) {
	t.Parallel()
	runMatchCases(t, []matchCase{
		{
			expr:    `:age = "40"`,
			match:   []attrs{{"age": "40"}},
			noMatch: []attrs{{"age": 40.0}, {"age": "40.0"}, {"age": json.Number("40")}},
		},
		{
			expr:    `:age = 40.0`,
			match:   []attrs{{"age": 40.0}, {"age": 40}},
			noMatch: []attrs{{"age": "40"}, {"age": "40.0"}},
		},
		{
			expr:    `:t = -3.5`,
			match:   []attrs{{"t": -3.5}},
			noMatch: []attrs{{"t": 3.5}, {"t": -3.0}},
		},
		{
			expr:    `:t < -3`,
			match:   []attrs{{"t": -3.5}, {"t": -100}},
			noMatch: []attrs{{"t": -3.0}, {"t": 0.0}},
		},
		{
			expr:    `:t > -3.5`,
			match:   []attrs{{"t": -3.25}, {"t": 0.0}},
			noMatch: []attrs{{"t": -3.5}, {"t": -4.0}},
		},
		{
			expr:    `:x = 0.1`,
			match:   []attrs{{"x": 0.1}},
			noMatch: []attrs{{"x": 0.10000000000000002}},
		},
		{
			expr:    `:x = 0`,
			match:   []attrs{{"x": 0.0}, {"x": math.Copysign(0, -1)}, {"x": 0}},
			noMatch: []attrs{{"x": "0"}, {"x": false}},
		},
		{
			expr:    `:x = -0`,
			match:   []attrs{{"x": 0.0}},
			noMatch: []attrs{{"x": 1e-300}},
		},
		{
			expr:    `:big = 9007199254740993`,
			match:   []attrs{{"big": 9007199254740992.0}}, // both round to 2^53: numbers are float64
			noMatch: []attrs{{"big": 9007199254740994.0}},
		},
		// Values of other types are present but never compare equal or unequal to anything.
		{
			expr:    `:flag`,
			match:   []attrs{{"flag": true}, {"flag": []string{"x"}}},
			noMatch: []attrs{{}},
		},
		{
			expr:    `:flag != "true" OR :flag != 1 OR hasPrefix(:flag, "t")`,
			match:   []attrs{{"flag": "false"}},
			noMatch: []attrs{{"flag": true}, {"flag": nil}, {"flag": math.NaN()}, {"flag": json.Number("zz")}},
		},
	})
}

// TestAbsentAttribute checks that every operator is false on an absent attribute, and so its negation true.
func TestAbsentAttribute(t *testing.T) {
	t.Parallel()
	exprs := []string{
		`:k = "v"`, `:k != "v"`, `:k = 1`, `:k != 1`, `:k > 1`, `:k >= 1`, `:k < 1`, `:k <= 1`,
		`hasPrefix(:k, "")`, `hasSuffix(:k, "")`, `:k`,
	}
	present := attrs{"other": "v", "K": "v"}
	for _, expr := range exprs {
		f, err := Compile(expr)
		require.NoError(t, err)
		require.False(t, f.Match(present), expr)
		require.False(t, f.Match(nil), expr)
		not, err := Compile("NOT " + expr)
		require.NoError(t, err)
		require.True(t, not.Match(present), "NOT "+expr)
	}
	// The empty prefix and suffix match any present string, so the absent case above is not vacuous.
	for _, expr := range []string{`hasPrefix(:k, "")`, `hasSuffix(:k, "")`} {
		f, err := Compile(expr)
		require.NoError(t, err)
		require.True(t, f.Match(attrs{"k": "anything"}), expr)
	}
}

func TestCaseSensitivity(t *testing.T) {
	t.Parallel()
	runMatchCases(t, []matchCase{
		{
			expr:    `:Name = "Bob"`,
			match:   []attrs{{"Name": "Bob"}},
			noMatch: []attrs{{"name": "Bob"}, {"NAME": "Bob"}},
		},
		{
			expr:    `:name = "BOB"`,
			match:   []attrs{{"name": "BOB"}},
			noMatch: []attrs{{"name": "Bob"}},
		},
		// A key may spell a keyword: after ':' it is a name, not a keyword.
		{
			expr:    `:AND AND :and AND :NOT AND :hasPrefix`,
			match:   []attrs{{"AND": 1.0, "and": 1.0, "NOT": 1.0, "hasPrefix": 1.0}},
			noMatch: []attrs{{"and": 1.0, "NOT": 1.0, "hasPrefix": 1.0}},
		},
	})
}

func TestStringsAndKeys(t *testing.T) {
	t.Parallel()
	runMatchCases(t, []matchCase{
		{
			expr:    `:q = "say \"hi\""`,
			match:   []attrs{{"q": `say "hi"`}},
			noMatch: []attrs{{"q": `say \"hi\"`}, {"q": "say hi"}},
		},
		{
			expr:    `:p = "C:\\dir\\"`,
			match:   []attrs{{"p": `C:\dir\`}},
			noMatch: []attrs{{"p": `C:\\dir\\`}},
		},
		{
			expr:    `:"a\"b\\c" = 1`,
			match:   []attrs{{`a"b\c`: 1.0}},
			noMatch: []attrs{{`a\"b\\c`: 1.0}},
		},
		{
			expr:    `:empty = ""`,
			match:   []attrs{{"empty": ""}},
			noMatch: []attrs{{"empty": " "}, {}},
		},
		{
			expr:    `:city = "Zürich" OR hasPrefix(:name, "日本") OR :"ключ" = "значение" OR hasSuffix(:e, "🦀")`,
			match:   []attrs{{"city": "Zürich"}, {"name": "日本語"}, {"ключ": "значение"}, {"e": "crab 🦀"}},
			noMatch: []attrs{{"city": "Zurich"}, {"name": "語日本"}, {"ключ": "Значение"}, {"e": "🦀 crab"}},
		},
		{
			// Raw control characters and newlines are allowed in strings: there is no escape for them.
			expr:    ":m = \"line1\nline2\ttab\"",
			match:   []attrs{{"m": "line1\nline2\ttab"}},
			noMatch: []attrs{{"m": "line1 line2 tab"}},
		},
		{
			expr:    `:_a-b_9 = 1 AND :"1st" = 2 OR :x`,
			match:   []attrs{{"x": 1.0}, {"_a-b_9": 1.0, "1st": 2.0}},
			noMatch: []attrs{{}, {"_a-b_9": 1.0}, {"_a": 1.0, "1st": 2.0}},
		},
		{
			expr:    "\t:a\n=\r\n1\t AND(:b)AND:c",
			match:   []attrs{{"a": 1.0, "b": "", "c": ""}},
			noMatch: []attrs{{"a": 1.0, "b": ""}},
		},
		{
			expr:    `:a=1 AND :b!=2 AND :c<3 AND :d<=4 AND :e>5 AND :f>=6 AND hasPrefix(:g,"x")`,
			match:   []attrs{{"a": 1, "b": 1, "c": 1, "d": 4, "e": 6, "f": 6, "g": "xy"}},
			noMatch: []attrs{{"a": 1, "b": 2, "c": 1, "d": 4, "e": 6, "f": 6, "g": "xy"}},
		},
	})
}

func TestEmptyExpressionMatchesEverything(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"", " ", "\t\r\n "} {
		f, err := Compile(expr)
		require.NoError(t, err)
		require.Equal(t, expr, f.String())
		require.True(t, f.Match(nil))
		require.True(t, f.Match(attrs{"a": 1.0}))
	}
	var nilFilter *Filter
	require.True(t, nilFilter.Match(attrs{"a": 1.0}))
	require.Equal(t, "", nilFilter.String())
}

func TestLimitsAccepted(t *testing.T) {
	t.Parallel()
	accepted := map[string]string{
		"256 bytes":                `:a = "` + strings.Repeat("x", 249) + `"`,
		"256 bytes of multibyte":   `:a = "` + strings.Repeat("é", 124) + `x"`,
		"depth 32 parentheses":     strings.Repeat("(", 32) + ":a" + strings.Repeat(")", 32),
		"depth 32 NOT":             strings.Repeat("NOT ", 32) + ":a",
		"depth 32 mixed":           strings.Repeat("NOT (", 16) + ":a" + strings.Repeat(")", 16),
		"32 terms":                 strings.Repeat(":a OR ", 31) + ":a",
		"64-character key":         ":" + strings.Repeat("k", 64),
		"64-character quoted key":  `:"` + strings.Repeat("ü", 64) + `"`,
		"sibling parens not depth": strings.Repeat("(:a) AND ", 20) + "(:a)",
	}
	for name, expr := range accepted {
		require.LessOrEqual(t, len(expr), MaxLength, name)
		_, err := Compile(expr)
		require.NoError(t, err, name)
	}
}

// TestMatchDoesNotAllocate enforces what BenchmarkMatch256 reports: evaluation is allocation-free.
func TestMatchDoesNotAllocate(t *testing.T) {
	f, err := Compile(benchExpr)
	require.NoError(t, err)
	a := benchAttrs()
	require.True(t, f.Match(a))
	require.Zero(t, testing.AllocsPerRun(100, func() { f.Match(a) }))

	// Attributes built in Go rather than decoded from JSON take other paths through the evaluator.
	other, err := Compile(`:a = 1 AND :b > 1 AND :c < 3 AND :d != "x" AND hasSuffix(:d, "y") AND :e = 1.5`)
	require.NoError(t, err)
	b := attrs{"a": 1, "b": int64(2), "c": json.Number("2"), "d": "yy", "e": float32(1.5)}
	require.True(t, other.Match(b))
	require.Zero(t, testing.AllocsPerRun(100, func() { other.Match(b) }))
}

// TestConcurrentMatch shares one Filter across goroutines; run with -race.
func TestConcurrentMatch(t *testing.T) {
	t.Parallel()
	f, err := Compile(benchExpr)
	require.NoError(t, err)
	var wg sync.WaitGroup
	results := make([]bool, 8)
	for i := range results {
		wg.Go(func() {
			a := benchAttrs()
			ok := true
			for range 1000 {
				ok = ok && f.Match(a)
			}
			results[i] = ok
		})
	}
	wg.Wait()
	for _, ok := range results {
		require.True(t, ok)
	}
}
