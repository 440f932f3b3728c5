package policy

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Error is a syntax error in one statement. Column positions are part of the API contract (the policies API
// answers 400 with them), so every message points at the token that made the statement invalid.
type Error struct {
	Statement int    // 0-based index of the statement in the list given to ParseStatements
	Column    int    // 1-based position in the statement, counted in characters (runes), newlines included
	Message   string // what was wrong, naming the offending token
}

// Error formats the error as "statement N, column C: message", with the same 0-based N as Statement.
func (e *Error) Error() string {
	return fmt.Sprintf("statement %d, column %d: %s", e.Statement, e.Column, e.Message)
}

// ParseStatements parses a policy's statements. It stops at the first invalid statement and returns its error as
// an *Error carrying that statement's index.
func ParseStatements(texts []string) ([]Statement, error) {
	statements := make([]Statement, 0, len(texts))
	for i, text := range texts {
		s, err := parse(text, i)
		if err != nil {
			return nil, err
		}
		statements = append(statements, s)
	}
	return statements, nil
}

// Parse parses a single statement; an error is an *Error with Statement 0.
func Parse(text string) (Statement, error) {
	return parse(text, 0)
}

// ocidPattern accepts the OCIDs a location can name: a compartment, or a tenancy (the root compartment). It
// mirrors tenancy.ocidPattern; it is repeated rather than imported to keep this package free of dependencies.
var ocidPattern = regexp.MustCompile(`^ocid1\.(compartment|tenancy)\.[a-z0-9-]+\.[a-z0-9-]*\.[a-z2-7]{32,}$`)

var (
	verbsByKeyword = map[string]Verb{"inspect": VerbInspect, "read": VerbRead, "use": VerbUse, "manage": VerbManage}
	resourceTypes  = func() map[string]ResourceType {
		m := make(map[string]ResourceType, len(ResourceTypes))
		for _, rt := range ResourceTypes {
			m[string(rt)] = rt
		}
		return m
	}()
	variables = func() map[string]bool {
		m := make(map[string]bool, len(Variables))
		for _, v := range Variables {
			m[v] = true
		}
		return m
	}()
)

type tokenKind int

const (
	tokEnd tokenKind = iota
	tokWord
	tokString
	tokComma
	tokColon
	tokLBrace
	tokRBrace
	tokEqual
	tokNotEqual
)

type token struct {
	kind tokenKind
	text string // a word's text or a string's contents without quotes
	raw  string // the source text, for messages
	col  int
}

// is reports whether t is the keyword kw; keywords are case-insensitive.
func (t token) is(kw string) bool {
	return t.kind == tokWord && strings.EqualFold(t.text, kw)
}

// describe names t in an error message.
func (t token) describe() string {
	if t.kind == tokEnd {
		return "end of statement"
	}
	return fmt.Sprintf("%q", t.raw)
}

// parser is a recursive-descent parser over one statement. Tokens are lexed on demand so that an error reports the
// first problem from the left, whether it is lexical (an unterminated quote) or grammatical.
type parser struct {
	src    []rune
	pos    int
	endCol int    // column reported for the end of the statement: just after its last non-space character
	peeked *token // one token of lookahead
}

// syntaxError is panicked by parser.fail and recovered by parse; panicking keeps every grammar function free of
// error plumbing, as text/template's parser does.
type syntaxError struct {
	col int
	msg string
}

func parse(text string, index int) (s Statement, err error) {
	p := &parser{src: []rune(text)}
	last := len(p.src) - 1
	for last >= 0 && unicode.IsSpace(p.src[last]) {
		last--
	}
	p.endCol = last + 2
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(syntaxError)
			if !ok {
				panic(r)
			}
			s, err = Statement{}, &Error{Statement: index, Column: se.col, Message: se.msg}
		}
	}()
	s = p.statement()
	s.Text = text
	return s, nil
}

func (p *parser) fail(col int, format string, args ...any) {
	panic(syntaxError{col: col, msg: fmt.Sprintf(format, args...)})
}

func (p *parser) peek() token {
	if p.peeked == nil {
		t := p.lex()
		p.peeked = &t
	}
	return *p.peeked
}

func (p *parser) next() token {
	t := p.peek()
	p.peeked = nil
	return t
}

// isWordRune reports whether r may appear in an unquoted name: compartment names are letters, digits, '.', '_'
// and '-' (openapi.yaml), and the same set covers keywords, variables and OCIDs.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-'
}

func (p *parser) lex() token {
	for p.pos < len(p.src) && unicode.IsSpace(p.src[p.pos]) {
		p.pos++
	}
	start := p.pos
	col := start + 1
	if start >= len(p.src) {
		return token{kind: tokEnd, col: p.endCol}
	}
	single := func(kind tokenKind) token {
		p.pos++
		return token{kind: kind, raw: string(p.src[start]), col: col}
	}
	switch r := p.src[start]; {
	case r == ',':
		return single(tokComma)
	case r == ':':
		return single(tokColon)
	case r == '{':
		return single(tokLBrace)
	case r == '}':
		return single(tokRBrace)
	case r == '=':
		return single(tokEqual)
	case r == '!' && start+1 < len(p.src) && p.src[start+1] == '=':
		p.pos += 2
		return token{kind: tokNotEqual, raw: "!=", col: col}
	case r == '\'' || r == '"':
		// Either quote character opens a string and only the same one closes it, so a value can contain the other;
		// there are no escapes, which keeps quoting rules trivial to explain.
		for i := start + 1; i < len(p.src); i++ {
			if p.src[i] == r {
				p.pos = i + 1
				return token{kind: tokString, text: string(p.src[start+1 : i]), raw: string(p.src[start:p.pos]), col: col}
			}
		}
		p.fail(col, "unterminated quoted string")
	case isWordRune(r):
		for p.pos < len(p.src) && isWordRune(p.src[p.pos]) {
			p.pos++
		}
		w := string(p.src[start:p.pos])
		return token{kind: tokWord, text: w, raw: w, col: col}
	}
	p.fail(col, "unexpected character %q", p.src[start])
	return token{}
}

func (p *parser) statement() Statement {
	var s Statement
	if t := p.next(); !t.is("allow") {
		p.fail(t.col, "expected 'allow', found %s", t.describe())
	}
	s.Subject = p.subject()
	if t := p.next(); !t.is("to") {
		if s.Subject.AnyUser {
			p.fail(t.col, "expected 'to', found %s", t.describe())
		}
		p.fail(t.col, "expected ',' or 'to', found %s", t.describe())
	}
	s.Verb = p.verb()
	s.ResourceType = p.resourceType()
	if t := p.next(); !t.is("in") {
		p.fail(t.col, "expected 'in', found %s", t.describe())
	}
	s.Location = p.location()
	switch t := p.next(); {
	case t.kind == tokEnd:
	case t.is("where"):
		s.Condition = p.condition(0)
		if t := p.next(); t.kind != tokEnd {
			p.fail(t.col, "expected end of statement, found %s", t.describe())
		}
	default:
		p.fail(t.col, "expected 'where' or end of statement, found %s", t.describe())
	}
	return s
}

func (p *parser) subject() Subject {
	t := p.next()
	switch {
	case t.is("any-user"):
		return Subject{AnyUser: true}
	case t.is("group"):
		groups := []string{p.name("group name", "to")}
		for p.peek().kind == tokComma {
			p.next()
			if t := p.next(); !t.is("group") {
				p.fail(t.col, "expected 'group' after ',', found %s", t.describe())
			}
			groups = append(groups, p.name("group name", "to"))
		}
		return Subject{Groups: groups}
	}
	p.fail(t.col, "expected 'group' or 'any-user', found %s", t.describe())
	return Subject{}
}

// name reads a name: a bare word or a quoted string. reserved is the keyword that may follow the name's position;
// as a bare word it is taken as a sign the name was forgotten ("group to manage"), so such a name must be quoted.
func (p *parser) name(what, reserved string) string {
	t := p.next()
	switch {
	case t.kind == tokString && t.text == "":
		p.fail(t.col, "empty %s", what)
	case t.kind == tokString || (t.kind == tokWord && !t.is(reserved)):
		return t.text
	}
	p.fail(t.col, "expected %s, found %s", what, t.describe())
	return ""
}

func (p *parser) verb() Verb {
	t := p.next()
	if t.kind != tokWord {
		p.fail(t.col, "expected a verb (inspect, read, use or manage), found %s", t.describe())
	}
	v, ok := verbsByKeyword[strings.ToLower(t.text)]
	if !ok {
		p.fail(t.col, "unknown verb %q (expected inspect, read, use or manage)", t.text)
	}
	return v
}

func (p *parser) resourceType() ResourceType {
	const expected = "queues, queue-push, queue-pull, queue-metrics, queue-family, compartments, policies or all-resources"
	t := p.next()
	if t.kind != tokWord {
		p.fail(t.col, "expected a resource type (%s), found %s", expected, t.describe())
	}
	rt, ok := resourceTypes[strings.ToLower(t.text)]
	if !ok {
		p.fail(t.col, "unknown resource type %q (expected %s)", t.text, expected)
	}
	return rt
}

func (p *parser) location() Location {
	t := p.next()
	switch {
	case t.is("tenancy"):
		return Location{Tenancy: true}
	case t.is("compartment"):
		// A bare `id` always introduces an OCID; a compartment named "id" must be quoted.
		if p.peek().is("id") {
			p.next()
			t := p.next()
			if t.kind != tokWord && t.kind != tokString {
				p.fail(t.col, "expected a compartment OCID after 'id', found %s", t.describe())
			}
			if !ocidPattern.MatchString(t.text) {
				p.fail(t.col, "invalid OCID %q: expected a compartment or tenancy OCID", t.text)
			}
			return Location{ID: t.text}
		}
		path := []string{p.name("compartment name or 'id'", "where")}
		for p.peek().kind == tokColon {
			p.next()
			path = append(path, p.name("compartment name after ':'", ""))
		}
		return Location{Path: path}
	}
	p.fail(t.col, "expected 'tenancy' or 'compartment', found %s", t.describe())
	return Location{}
}

func (p *parser) condition(depth int) *Condition {
	t := p.next()
	if t.is("all") || t.is("any") {
		if depth == MaxConditionDepth {
			p.fail(t.col, "conditions may nest at most %d levels deep", MaxConditionDepth)
		}
		c := &Condition{Op: ConditionOp(strings.ToLower(t.text))}
		if b := p.next(); b.kind != tokLBrace {
			p.fail(b.col, "expected '{' after '%s', found %s", c.Op, b.describe())
		}
		for {
			c.Conditions = append(c.Conditions, p.condition(depth+1))
			switch t := p.next(); t.kind {
			case tokComma:
				continue
			case tokRBrace:
				return c
			default:
				p.fail(t.col, "expected ',' or '}', found %s", t.describe())
			}
		}
	}
	if t.kind != tokWord {
		p.fail(t.col, "expected a condition, found %s", t.describe())
	}
	variable := strings.ToLower(t.text)
	if !variables[variable] {
		p.fail(t.col, "unknown variable %q", t.text)
	}
	c := &Condition{Variable: variable}
	switch op := p.next(); op.kind {
	case tokEqual:
		c.Op = OpEqual
	case tokNotEqual:
		c.Op = OpNotEqual
	default:
		p.fail(op.col, "expected '=' or '!=' after %s, found %s", variable, op.describe())
	}
	v := p.next()
	if v.kind != tokString {
		p.fail(v.col, "expected a quoted value, found %s", v.describe())
	}
	c.Value = v.text
	return c
}
