package filter

import (
	"strings"
	"unicode/utf8"
)

// parser is a recursive-descent parser over the grammar of DESIGN section 6, one function per rule. The depth
// limit bounds its recursion; the term limit bounds the size of the tree.
type parser struct {
	lx    lexer
	lim   limits
	tok   token // the current, not yet consumed, token
	depth int
	terms int
}

// parse returns the expression's tree, or nil for an empty expression.
func parse(src string, lim limits) (node, error) {
	if len(src) > lim.length {
		return nil, errorAt(src, lim.length, "the expression is longer than %d bytes", lim.length)
	}
	p := &parser{lx: lexer{src: src}, lim: lim}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, nil
	}
	root, err := p.parseOr("")
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		if p.tok.kind == tokRParen {
			return nil, p.errorAt(p.tok, "unexpected ')' without a matching '('")
		}
		return nil, p.unexpectedAfterTerm("AND, OR or the end of the expression")
	}
	return root, nil
}

func (p *parser) advance() error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) errorAt(t token, format string, args ...any) *Error {
	return errorAt(p.lx.src, t.off, format, args...)
}

// found describes the current token for "expected X, found Y" messages; nothing at the end of the expression,
// where "expected X" says it all.
func (p *parser) found() string {
	if p.tok.kind == tokEOF {
		return ""
	}
	text := p.lx.src[p.tok.off:p.tok.end]
	const maxShown = 24 // long strings would drown the message
	if utf8.RuneCountInString(text) > maxShown {
		text = string([]rune(text)[:maxShown]) + "…"
	}
	return ", found '" + text + "'"
}

// miscased returns the keyword or function name that word spells in the wrong case, if any: the most likely
// mistake in a case-sensitive language.
func miscased(word string) (string, bool) {
	for _, kw := range [...]string{"AND", "OR", "NOT", "hasPrefix", "hasSuffix"} {
		if strings.EqualFold(word, kw) {
			return kw, true
		}
	}
	return "", false
}

func (p *parser) miscasedError() (*Error, bool) {
	if p.tok.kind != tokWord {
		return nil, false
	}
	kw, ok := miscased(p.tok.text)
	if !ok {
		return nil, false
	}
	if kw == "AND" || kw == "OR" || kw == "NOT" {
		return p.errorAt(p.tok, "keywords are upper case: use %s, not '%s'", kw, p.tok.text), true
	}
	return p.errorAt(p.tok, "function names are case-sensitive: use %s, not '%s'", kw, p.tok.text), true
}

// unexpectedAfterTerm reports a token that cannot follow a complete term.
func (p *parser) unexpectedAfterTerm(expected string) *Error {
	if err, ok := p.miscasedError(); ok {
		return err
	}
	return p.errorAt(p.tok, "expected %s%s", expected, p.found())
}

// enter opens a nesting level ('(' or NOT) at the current token.
func (p *parser) enter() error {
	p.depth++
	if p.depth > p.lim.depth {
		return p.errorAt(p.tok, "nesting is deeper than %d levels", p.lim.depth)
	}
	return nil
}

// countTerm counts a key test at the current token.
func (p *parser) countTerm() error {
	p.terms++
	if p.terms > p.lim.terms {
		return p.errorAt(p.tok, "more than %d terms", p.lim.terms)
	}
	return nil
}

// parseOr: or = and { "OR" and }. after names the token before the expression, for error messages.
func (p *parser) parseOr(after string) (node, error) {
	first, err := p.parseAnd(after)
	if err != nil || p.tok.kind != tokOr {
		return first, err
	}
	or := &orNode{}
	or.add(first)
	for p.tok.kind == tokOr {
		if err := p.advance(); err != nil {
			return nil, err
		}
		next, err := p.parseAnd("'OR'")
		if err != nil {
			return nil, err
		}
		or.add(next)
	}
	return or, nil
}

// parseAnd: and = unary { "AND" unary }.
func (p *parser) parseAnd(after string) (node, error) {
	first, err := p.parseUnary(after)
	if err != nil || p.tok.kind != tokAnd {
		return first, err
	}
	and := &andNode{}
	and.add(first)
	for p.tok.kind == tokAnd {
		if err := p.advance(); err != nil {
			return nil, err
		}
		next, err := p.parseUnary("'AND'")
		if err != nil {
			return nil, err
		}
		and.add(next)
	}
	return and, nil
}

// parseUnary: unary = "NOT" unary | primary.
func (p *parser) parseUnary(after string) (node, error) {
	if p.tok.kind != tokNot {
		return p.parsePrimary(after)
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	operand, err := p.parseUnary("'NOT'")
	if err != nil {
		return nil, err
	}
	p.depth--
	return &notNode{operand: operand}, nil
}

// parsePrimary: primary = "(" expr ")" | key [ cmp literal ] | fn "(" key "," string ")".
func (p *parser) parsePrimary(after string) (node, error) {
	switch p.tok.kind {
	case tokLParen:
		return p.parseParens()
	case tokKey:
		return p.parseKeyTest()
	case tokFunc:
		return p.parseCall()
	}
	if err, ok := p.miscasedError(); ok {
		return nil, err
	}
	if p.tok.kind == tokWord {
		if p.tok.call {
			return nil, p.errorAt(p.tok, "unknown function '%s' (the functions are hasPrefix and hasSuffix)", p.tok.text)
		}
		return nil, p.errorAt(p.tok, "unknown word '%s' (keys start with ':', as in :%s)", p.tok.text, p.tok.text)
	}
	if after == "" {
		return nil, p.errorAt(p.tok, "expected an expression%s", p.found())
	}
	return nil, p.errorAt(p.tok, "expected an expression after %s%s", after, p.found())
}

func (p *parser) parseParens() (node, error) {
	open := p.tok
	if err := p.enter(); err != nil {
		return nil, err
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	inner, err := p.parseOr("'('")
	if err != nil {
		return nil, err
	}
	switch p.tok.kind {
	case tokRParen:
	case tokEOF:
		return nil, p.errorAt(p.tok, "expected ')' to close the '(' at column %d", columnOf(p.lx.src, open.off))
	default:
		return nil, p.unexpectedAfterTerm("AND, OR or ')'")
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	p.depth--
	return inner, nil
}

// parseKeyTest parses a presence test or a comparison.
func (p *parser) parseKeyTest() (node, error) {
	if err := p.countTerm(); err != nil {
		return nil, err
	}
	key := p.tok.text
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokCmp {
		return &presenceNode{key: key}, nil
	}
	op := p.tok.op
	if err := p.advance(); err != nil {
		return nil, err
	}
	n := &compareNode{key: key, op: op}
	switch {
	case p.tok.kind == tokNumber:
		n.isNumber, n.num = true, p.tok.num
	case p.tok.kind == tokString && op.ordering():
		return nil, p.errorAt(p.tok, "a number is required after '%s'", op)
	case p.tok.kind == tokString:
		n.str = p.tok.text
	case op.ordering():
		return nil, p.errorAt(p.tok, "expected a number after '%s'%s", op, p.found())
	default:
		return nil, p.errorAt(p.tok, "expected a literal after '%s'%s", op, p.found())
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	return n, nil
}

// parseCall parses hasPrefix(:key, "string") and hasSuffix(:key, "string").
func (p *parser) parseCall() (node, error) {
	if err := p.countTerm(); err != nil {
		return nil, err
	}
	n := &funcNode{fn: p.tok.fn}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokLParen {
		return nil, p.errorAt(p.tok, "expected '(' after %s%s", n.fn, p.found())
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokKey {
		return nil, p.errorAt(p.tok, "expected a key as the first argument of %s%s", n.fn, p.found())
	}
	n.key = p.tok.text
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokComma {
		return nil, p.errorAt(p.tok, "expected ',' after the key in %s%s", n.fn, p.found())
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	switch p.tok.kind {
	case tokString:
		n.arg = p.tok.text
	case tokNumber:
		return nil, p.errorAt(p.tok, "%s needs a string as its second argument, not a number", n.fn)
	default:
		return nil, p.errorAt(p.tok, "expected a string as the second argument of %s%s", n.fn, p.found())
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokRParen {
		return nil, p.errorAt(p.tok, "expected ')' after the arguments of %s%s", n.fn, p.found())
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	return n, nil
}
