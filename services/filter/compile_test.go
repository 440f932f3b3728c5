package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, expr string
		column     int
		message    string
	}{
		// Literals after comparison operators.
		{"missing literal", `:name =`, 8, `expected a literal after '='`},
		{"design example", `:a OR :bcde =`, 14, `expected a literal after '='`},
		{"key instead of literal", `:a != :b`, 7, `expected a literal after '!=', found ':b'`},
		{"double equals", `:a == 1`, 5, `expected a literal after '=', found '='`},
		{"string after >", `:age > "40"`, 8, `a number is required after '>'`},
		{"string after >=", `:age >= "40"`, 9, `a number is required after '>='`},
		{"string after <", `:age < "40"`, 8, `a number is required after '<'`},
		{"string after <=", `:age <= "40"`, 9, `a number is required after '<='`},
		{"missing number", `:age >`, 7, `expected a number after '>'`},
		{"key after <=", `:age <= :x`, 9, `expected a number after '<=', found ':x'`},
		{"lone bang", `:a ! = 1`, 5, `expected '=' after '!'`},

		// Functions.
		{"number in hasPrefix", `hasPrefix(:name, 4)`, 18, `hasPrefix needs a string as its second argument, not a number`},
		{"missing comma", `hasPrefix(:name "x")`, 17, `expected ',' after the key in hasPrefix, found '"x"'`},
		{"missing paren after fn", `hasPrefix :a`, 11, `expected '(' after hasPrefix, found ':a'`},
		{"string first", `hasPrefix("x", :a)`, 11, `expected a key as the first argument of hasPrefix, found '"x"'`},
		{"key second", `hasSuffix(:a, :b)`, 15, `expected a string as the second argument of hasSuffix, found ':b'`},
		{"unclosed call", `hasSuffix(:a, "x"`, 18, `expected ')' after the arguments of hasSuffix`},
		{"extra argument", `hasSuffix(:a, "x", "y")`, 18, `expected ')' after the arguments of hasSuffix, found ','`},
		{"unknown function", `contains(:a, "x")`, 1, `unknown function 'contains' (the functions are hasPrefix and hasSuffix)`},
		{"miscased function", `hasprefix(:a, "x")`, 1, `function names are case-sensitive: use hasPrefix, not 'hasprefix'`},
		{"miscased function 2", `:a OR HasSuffix(:a, "x")`, 7, `function names are case-sensitive: use hasSuffix, not 'HasSuffix'`},

		// Parentheses.
		{"unclosed paren", `(:a`, 4, `expected ')' to close the '(' at column 1`},
		{"unclosed inner paren", `:a AND ((:b) OR :c`, 19, `expected ')' to close the '(' at column 8`},
		{"unmatched close", `:a)`, 3, `unexpected ')' without a matching '('`},
		{"empty parens", `()`, 2, `expected an expression after '(', found ')'`},
		{"close first", `)`, 1, `expected an expression, found ')'`},
		{"garbage in parens", `(:a :b)`, 5, `expected AND, OR or ')', found ':b'`},

		// Keys.
		{"colon alone", `:`, 2, `expected a key name after ':'`},
		{"space after colon", `: a`, 2, `expected a key name after ':'`},
		{"missing colon", `name = "x"`, 1, `unknown word 'name' (keys start with ':', as in :name)`},
		{"missing colon later", `:a AND b`, 8, `unknown word 'b' (keys start with ':', as in :b)`},
		{"digit key", `:1abc = 1`, 2, `a key name cannot start with '1': quote it, as in :"1abc"`},
		{"dash key", `:-a`, 2, `a key name cannot start with '-': quote it, as in :"-a"`},
		{"empty quoted key", `:a OR :""`, 7, `a key must not be empty`},
		{"long key", ":" + strings.Repeat("k", 65), 1, `a key must be at most 64 characters`},
		{"long quoted key", `:a OR :"` + strings.Repeat("ü", 65) + `"`, 7, `a key must be at most 64 characters`},

		// Strings.
		{"unterminated string", `:a = "abc`, 6, `unterminated string`},
		{"unterminated after escape", `:a = "abc\`, 6, `unterminated string`},
		{"unterminated quoted key", `:"abc`, 2, `unterminated string`},
		{"bad escape", `:a = "a\nb"`, 8, `invalid escape '\n' in a string (only \" and \\ are allowed)`},
		{"bad unicode escape", `:a = "\u00e9"`, 7, `invalid escape '\u' in a string (only \" and \\ are allowed)`},
		{"unprintable escape", ":a = \"\\\x01\"", 7, `invalid escape in a string (only \" and \\ are allowed)`},
		{"invalid UTF-8 in string", ":a = \"\xff\"", 7, `invalid UTF-8 in a string`},
		{"invalid UTF-8 after backslash", ":a = \"\\\xff\"", 8, `invalid UTF-8 in a string`},
		{"invalid UTF-8 outside", ":a AND \xff", 8, `invalid UTF-8`},

		// Numbers.
		{"trailing dot", `:a = 1.`, 8, `expected a digit after '.'`},
		{"dot then space", `:a = 1. AND :b`, 8, `expected a digit after '.'`},
		{"lone minus", `:a = -`, 7, `expected a digit after '-'`},
		{"minus space", `:a = - 1`, 7, `expected a digit after '-'`},
		{"leading zero", `:a = 01`, 6, `a number must not have leading zeros`},
		{"negative leading zeros", `:a = -007`, 6, `a number must not have leading zeros`},
		{"leading dot", `:a = .5`, 6, `unexpected character '.'`},
		{"exponent", `:a = 1e5`, 7, `unexpected 'e' after a number`},
		{"two dots", `:a = 1.2.3`, 9, `unexpected '.' after a number`},
		{"number then letters", `:a = 12abc`, 8, `unexpected 'a' after a number`},
		{"number then minus", `:a = 1-2`, 7, `unexpected '-' after a number`},

		// Keywords and operators.
		{"dangling AND", `:a AND`, 7, `expected an expression after 'AND'`},
		{"dangling OR", `:a OR `, 7, `expected an expression after 'OR'`},
		{"dangling NOT", `NOT`, 4, `expected an expression after 'NOT'`},
		{"OR OR", `:a OR OR :b`, 7, `expected an expression after 'OR', found 'OR'`},
		{"AND OR", `:a AND OR :b`, 8, `expected an expression after 'AND', found 'OR'`},
		{"leading AND", `AND :a`, 1, `expected an expression, found 'AND'`},
		{"lower-case and", `:a and :b`, 4, `keywords are upper case: use AND, not 'and'`},
		{"lower-case or", `:a or :b`, 4, `keywords are upper case: use OR, not 'or'`},
		{"lower-case not", `not :a`, 1, `keywords are upper case: use NOT, not 'not'`},
		{"mixed-case And", `:a And :b`, 4, `keywords are upper case: use AND, not 'And'`},
		{"lower-case and alone", `and`, 1, `keywords are upper case: use AND, not 'and'`},
		{"lower-case in parens", `(:a or :b)`, 5, `keywords are upper case: use OR, not 'or'`},
		{"literal as expression", `"x" = :a`, 1, `expected an expression, found '"x"'`},
		{"number as expression", `1 = :a`, 1, `expected an expression, found '1'`},
		{"NOT then string", `NOT "x"`, 5, `expected an expression after 'NOT', found '"x"'`},
		{"long token shortened", `NOT "` + strings.Repeat("y", 40) + `"`, 5,
			`expected an expression after 'NOT', found '"` + strings.Repeat("y", 23) + `…'`},

		// Trailing garbage.
		{"trailing key", `:a = 1 :b`, 8, `expected AND, OR or the end of the expression, found ':b'`},
		{"trailing string", `:a = "x" "y"`, 10, `expected AND, OR or the end of the expression, found '"y"'`},
		{"missing operator", `:name "Bob"`, 7, `expected AND, OR or the end of the expression, found '"Bob"'`},
		{"trailing word", `:a = 1 foo`, 8, `expected AND, OR or the end of the expression, found 'foo'`},
		{"trailing comma", `:a,`, 3, `expected AND, OR or the end of the expression, found ','`},
		{"unexpected character", `:a = #`, 6, `unexpected character '#'`},
		{"unexpected unicode", `:a AND «`, 8, `unexpected character '«'`},
		{"non-breaking space", ":a\u00a0AND :b", 3, `unexpected character '\u00a0'`},

		// Columns count characters, not bytes.
		{"column after multibyte key", `:"é" =`, 7, `expected a literal after '='`},
		{"column after CJK", `:"日本" = 1 AND`, 14, `expected an expression after 'AND'`},
		{"column after emoji", `:a = "🦀" :b`, 10, `expected AND, OR or the end of the expression, found ':b'`},

		// Limits.
		{"257 bytes", `:a = "` + strings.Repeat("x", 250) + `"`, 257, `the expression is longer than 256 bytes`},
		{"257 bytes of spaces", strings.Repeat(" ", 257), 257, `the expression is longer than 256 bytes`},
		{"257 bytes multibyte at boundary", `:a = "` + strings.Repeat("é", 125) + `"`, 132, `the expression is longer than 256 bytes`},
		{"257 bytes multibyte across boundary", `:a = "x` + strings.Repeat("é", 125) + `"`, 132, `the expression is longer than 256 bytes`},
		{"33 parentheses", strings.Repeat("(", 33) + ":a" + strings.Repeat(")", 33), 33, `nesting is deeper than 32 levels`},
		{"33 NOT", strings.Repeat("NOT ", 33) + ":a", 129, `nesting is deeper than 32 levels`},
		{"33 mixed", strings.Repeat("NOT (", 16) + "NOT :a" + strings.Repeat(")", 16), 81, `nesting is deeper than 32 levels`},
		{"33 terms", strings.Repeat(":a OR ", 32) + ":a", 193, `more than 32 terms`},
		// 33 calls do not fit in 256 bytes; a call is counted like any other term.
		{"33 terms ending in a call", strings.Repeat(`hasPrefix(:a,"")OR `, 2) + strings.Repeat(":a OR ", 30) + `hasSuffix(:a,"")`,
			2*19 + 30*6 + 1, `more than 32 terms`},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Compile(tc.expr)
			require.Error(t, err, "%q compiled", tc.expr)
			require.Nil(t, f)
			var ferr *Error
			require.True(t, errors.As(err, &ferr), "want *Error, got %T", err)
			require.Equal(t, tc.message, ferr.Message, "expr %q", tc.expr)
			require.Equal(t, tc.column, ferr.Column, "expr %q: %s", tc.expr, ferr.Message)
		})
	}
}

func TestErrorFormat(t *testing.T) {
	t.Parallel()
	_, err := Compile(`:a OR :bcde =`)
	require.EqualError(t, err, `column 14: expected a literal after '='`)
	wrapped := errors.Join(errors.New("consumerGroupFilter"), err)
	var ferr *Error
	require.True(t, errors.As(wrapped, &ferr))
	require.Equal(t, 14, ferr.Column)
}

// TestCanonical pins the normalized rendering the fuzz tests rely on as a parser oracle.
func TestCanonical(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`:a`:                                  `:a`,
		`  :a  AND(:b)AND:c`:                  `:a AND :b AND :c`,
		`:a AND (:b AND :c)`:                  `:a AND :b AND :c`,
		`(:a OR :b) OR :c`:                    `:a OR :b OR :c`,
		`(:a OR :b) AND :c`:                   `(:a OR :b) AND :c`,
		`:a OR :b AND :c`:                     `:a OR :b AND :c`,
		`NOT (:a AND :b)`:                     `NOT (:a AND :b)`,
		`NOT NOT (:a)`:                        `NOT NOT :a`,
		`(NOT :a) AND :b`:                     `NOT :a AND :b`,
		`:"x" = 40.0`:                         `:x = 40`,
		`:"order.id">=-0.50`:                  `:"order.id" >= -0.5`,
		`:q!="a\"b\\c"`:                       `:q != "a\"b\\c"`,
		`hasPrefix( :"k k" ,"v" )`:            `hasPrefix(:"k k", "v")`,
		`:a = 123456789012345678901234567890`: `:a = 123456789012345680000000000000`,
	}
	for src, want := range cases {
		f, err := Compile(src)
		require.NoError(t, err, src)
		require.Equal(t, want, f.canonical(), src)
		again, err := Compile(want)
		require.NoError(t, err, want)
		require.Equal(t, want, again.canonical(), want)
	}
}
