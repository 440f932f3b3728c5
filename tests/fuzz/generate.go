// Package fuzz sends every operation of the OpenAPI spec random and mutated requests — path, query and header
// parameters and JSON bodies generated from the operation's schemas, then broken: invalid UTF-8, NUL, unpaired
// surrogates, huge and fractional numbers, wrong types, deep nesting, truncation — through the real router of a
// real server on a real PostgreSQL, and the frames of a watch over its WebSocket, and fails on any 5xx, dropped
// connection or panic. TestFuzzAPI runs for FERRY_FUZZ_DURATION (a few seconds in make test, longer in make fuzz);
// FERRY_FUZZ_SEED replays a run.
package fuzz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Fixtures are real resources the generated requests name, so that requests get past the 404s into the handlers.
type Fixtures struct {
	// IDs by parameter or property name (queueId, compartmentId, consumerGroupId, policyId, workRequestId,
	// messageReceipt, consumerId, …).
	IDs map[string][]string
	// Values are whole valid values of body properties by name (a policy's statements), tried before generating.
	Values map[string][]any
}

// Operation is one operation of the spec, as the generator needs it.
type Operation struct {
	ID     string
	Method string
	Path   string // the template: /20210201/queues/{queueId}
	Params []*openapi3.Parameter
	Body   *openapi3.Schema // the application/json body's schema (nil: none)
}

// Operations lists the spec's operations, sorted by id (a seed replays the same run).
func Operations(doc *openapi3.T) []Operation {
	var ops []Operation
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			o := Operation{ID: op.OperationID, Method: method, Path: path}
			for _, p := range item.Parameters {
				if op.Parameters.GetByInAndName(p.Value.In, p.Value.Name) == nil {
					o.Params = append(o.Params, p.Value)
				}
			}
			for _, p := range op.Parameters {
				o.Params = append(o.Params, p.Value)
			}
			if rb := op.RequestBody; rb != nil && rb.Value != nil {
				if mt := rb.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
					o.Body = mt.Schema.Value
				}
			}
			ops = append(ops, o)
		}
	}
	slices.SortFunc(ops, func(a, b Operation) int { return strings.Compare(a.ID, b.ID) })
	return ops
}

// Request is a generated request: everything but the host and the token.
type Request struct {
	Op          string
	Method      string
	Path        string // escaped path and query
	Header      http.Header
	ContentType string
	Body        []byte
}

// String renders the request for a failure report.
func (r Request) String() string {
	body := r.Body
	if len(body) > 400 {
		body = append(body[:400:400], "…"...)
	}
	return fmt.Sprintf("%s %s %s\n  headers %v\n  content-type %q body %q", r.Op, r.Method, r.Path, r.Header, r.ContentType, body)
}

// Generator makes requests from a random source.
type Generator struct {
	R   *rand.Rand
	Fix Fixtures
}

// chance is true with probability p.
func (g *Generator) chance(p float64) bool { return g.R.Float64() < p }

func (g *Generator) pick(list []string) string { return list[g.R.IntN(len(list))] }

// badTexts are percent-encoded values that break parameters: text PostgreSQL cannot hold, and odd but legal text.
var badTexts = []string{"%FF", "%00", "a%00b", "%C0%80", "%ED%A0%80", "%E2%82", "%F4%90%80%80", "%FE%FF", "%EF%BF%BD",
	"", "%20", "..", "%2F", "%2E%2E%2F", "%25", "*", "a*b*", "%27%20OR%20%271%27%3D%271", "%E2%9C%89", "%F0%9F%98%80",
	"-1", "0", "99999999999999999999999", "1e400", "-0", "NaN", "0x10", "1.5", "true", "null", "%5B%5D", "%7B%7D"}

// badHeaderTexts are header values the Go client can send (no NUL or control characters: net/http refuses those).
var badHeaderTexts = []string{"\xff", "a\xfe", "\xc0\x80", "\xed\xa0\x80", "", " ", strings.Repeat("h", 300), "*",
	"W/\"x\"", "\"\"", "ü"}

// Next generates one request for op.
func (g *Generator) Next(op Operation) Request {
	req := Request{Op: op.ID, Method: op.Method, Header: http.Header{}}
	path := op.Path
	var query []string
	for _, p := range op.Params {
		switch p.In {
		case openapi3.ParameterInPath:
			path = strings.Replace(path, "{"+p.Name+"}", g.pathValue(p), 1)
		case openapi3.ParameterInQuery:
			// A GetMessages without timeoutInSeconds waits for the queue's default: it always has one.
			longPoll := op.ID == "GetMessages" && p.Name == "timeoutInSeconds"
			if !p.Required && !longPoll && g.chance(0.5) {
				continue
			}
			if p.Required && !longPoll && g.chance(0.03) {
				continue // missing required parameter
			}
			n := 1
			if g.chance(0.03) {
				n = 2 // the parameter twice
			}
			for range n {
				query = append(query, url.QueryEscape(p.Name)+"="+g.queryValue(op, p))
			}
		case openapi3.ParameterInHeader:
			if !p.Required && g.chance(0.6) {
				continue
			}
			req.Header.Add(p.Name, g.headerValue(p))
		}
	}
	if g.chance(0.05) {
		query = append(query, g.pick([]string{"%FF=1", "x=%00", "unknown=1", "=", "&&", "a=%", "%zz=1"}))
	}
	req.Path = path
	if len(query) > 0 {
		req.Path += "?" + strings.Join(query, "&")
	}
	if op.Body != nil || g.chance(0.05) {
		req.ContentType = "application/json"
		if g.chance(0.04) {
			req.ContentType = g.pick([]string{"", "text/plain", "application/json; charset=latin1", "application/merge-patch+json", "application/json, text/plain", "multipart/form-data; boundary=x"})
		}
		req.Body = g.body(op.Body)
	}
	return req
}

// pathValue is the real id most of the time, else something broken.
func (g *Generator) pathValue(p *openapi3.Parameter) string {
	if ids := g.Fix.IDs[p.Name]; len(ids) > 0 && g.chance(0.75) {
		return url.PathEscape(g.pick(ids))
	}
	if g.chance(0.5) {
		return g.pick(badTexts)
	}
	if g.chance(0.2) {
		return strings.Repeat("a", 1+g.R.IntN(3000))
	}
	return url.PathEscape(g.mutateString(g.validString(p.Name, p.Schema.Value)))
}

func (g *Generator) queryValue(op Operation, p *openapi3.Parameter) string {
	s := p.Schema.Value
	if op.ID == "GetMessages" && p.Name == "timeoutInSeconds" && g.chance(0.9) {
		return "0" // a long poll would hold the worker for its whole timeout
	}
	if g.chance(0.2) {
		return g.pick(badTexts)
	}
	if ids := g.Fix.IDs[p.Name]; len(ids) > 0 && g.chance(0.7) {
		return url.QueryEscape(g.pick(ids))
	}
	if op.ID == "GetMessages" && p.Name == "timeoutInSeconds" {
		return g.pick([]string{"31", "-1", "x"})
	}
	switch {
	case s.Type.Is(openapi3.TypeInteger), s.Type.Is(openapi3.TypeNumber):
		return strconv.FormatInt(g.intIn(s), 10)
	case s.Type.Is(openapi3.TypeBoolean):
		return g.pick([]string{"true", "false", "TRUE", "1"})
	}
	v := g.validString(p.Name, s)
	if g.chance(0.3) {
		v = g.mutateString(v)
	}
	return url.QueryEscape(v)
}

func (g *Generator) headerValue(p *openapi3.Parameter) string {
	if g.chance(0.3) {
		return g.pick(badHeaderTexts)
	}
	return g.validString(p.Name, p.Schema.Value)
}

// validString is a string the schema (probably) accepts: a fixture id, an enum value, or text of a fitting length.
func (g *Generator) validString(name string, s *openapi3.Schema) string {
	if ids := g.Fix.IDs[name]; len(ids) > 0 {
		return g.pick(ids)
	}
	if len(s.Enum) > 0 {
		v, _ := s.Enum[g.R.IntN(len(s.Enum))].(string)
		return v
	}
	n := int(s.MinLength) + g.R.IntN(12)
	if s.MaxLength != nil && uint64(n) > *s.MaxLength {
		n = int(*s.MaxLength)
	}
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789-_."
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[g.R.IntN(len(letters))]
	}
	return string(b)
}

// mutateString breaks a string in one of the ways that matter to a text column or a parser.
func (g *Generator) mutateString(s string) string {
	switch g.R.IntN(8) {
	case 0:
		return s + "\xff"
	case 1:
		return s + "\x00"
	case 2:
		return "\xed\xa0\x80" + s
	case 3:
		return strings.Repeat(s+"x", 1+g.R.IntN(500))
	case 4:
		return ""
	case 5:
		return s + "'\"\\;--"
	case 6:
		return "é" + s + "✉"
	}
	return s + "*"
}

func (g *Generator) intIn(s *openapi3.Schema) int64 {
	lo, hi := int64(-5), int64(100)
	if s.Min != nil {
		lo = int64(*s.Min)
	}
	if s.Max != nil {
		hi = int64(*s.Max)
	}
	if hi < lo {
		hi = lo
	}
	if g.chance(0.1) { // just outside the range
		return g.pick2(lo-1, hi+1)
	}
	if g.chance(0.15) { // the bounds themselves, where sums and conversions overflow
		return g.pick2(lo, hi)
	}
	return lo + g.R.Int64N(hi-lo+1)
}

func (g *Generator) pick2(a, b int64) int64 {
	if g.chance(0.5) {
		return a
	}
	return b
}

// rawTexts replace a marker (rawMarker) in the encoded body with JSON text encoding/json cannot produce: invalid
// UTF-8, unpaired surrogate escapes, numbers beyond float64, deep nesting.
var rawTexts = []string{
	"\"a\xffb\"", "\"\xc0\x80\"", "\"\xed\xa0\x80\"", `"\ud800"`, `"\udc00\ud800"`, `"\ud83d"`, `"x\u0000"`, `"\u0000"`,
	`"\\u0000"`, `"\ud83d\ude00"`, `"\ufffd"`, `1e400`, `-1e400`, `99999999999999999999999999`, `-0`, `0.0000001`,
	`1.5`, `1E2`, `true`, `null`, `[]`, `{}`, `""`, `"` + strings.Repeat("\\\"", 10) + `"`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000),
	strings.Repeat("[", 100) + strings.Repeat("]", 100),
}

// body generates a JSON body for schema (random JSON when there is none) and mutates it.
func (g *Generator) body(schema *openapi3.Schema) []byte {
	var v any
	var raws []string
	if schema != nil && !g.chance(0.03) {
		v = g.value(schema, 0, &raws)
	} else {
		v = map[string]any{"x": rawMarker(0)}
		raws = append(raws, g.pick(rawTexts))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	for i, r := range raws {
		b = bytes.Replace(b, []byte(strconv.Quote(rawMarker(i))), []byte(r), 1)
	}
	if g.chance(0.05) { // byte-level damage
		switch g.R.IntN(5) {
		case 0:
			b = b[:g.R.IntN(len(b)+1)]
		case 1:
			if len(b) > 0 {
				b[g.R.IntN(len(b))] = byte(g.R.IntN(256))
			}
		case 2:
			b = append(b, b...)
		case 3:
			b = append(b, "\xff"...)
		default:
			b = nil
		}
	}
	return b
}

func rawMarker(i int) string { return fmt.Sprintf("FUZZRAW%dZ", i) }

// value generates a value of schema; with a small chance per node, a wrong or broken value in its place.
func (g *Generator) value(s *openapi3.Schema, depth int, raws *[]string) any {
	if g.chance(0.04) || depth > 8 {
		*raws = append(*raws, g.pick(rawTexts))
		return rawMarker(len(*raws) - 1)
	}
	if g.chance(0.03) {
		return []any{false, 1.5, "x", map[string]any{}, nil}[g.R.IntN(5)] // a wrong type
	}
	if len(s.AllOf) > 0 {
		return g.value(s.AllOf[g.R.IntN(len(s.AllOf))].Value, depth+1, raws)
	}
	if alts := append(s.OneOf, s.AnyOf...); len(alts) > 0 {
		return g.value(alts[g.R.IntN(len(alts))].Value, depth+1, raws)
	}
	switch {
	case s.Type == nil:
		return "x"
	case s.Type.Is(openapi3.TypeObject):
		obj := map[string]any{}
		for name, p := range s.Properties {
			if slices.Contains(s.Required, name) && !g.chance(0.03) || g.chance(0.5) {
				obj[name] = g.propertyValue(name, p.Value, depth, raws)
			}
		}
		if ap := s.AdditionalProperties.Schema; ap != nil && ap.Value != nil {
			for range g.R.IntN(4) {
				obj[g.validString("", &openapi3.Schema{MaxLength: openapi3.Uint64Ptr(20)})] = g.value(ap.Value, depth+1, raws)
			}
		}
		if g.chance(0.03) {
			obj["unknownField"] = 1
		}
		return obj
	case s.Type.Is(openapi3.TypeArray):
		n := int(s.MinItems) + g.R.IntN(3)
		if s.MaxItems != nil && uint64(n) > *s.MaxItems {
			n = int(*s.MaxItems)
		}
		if g.chance(0.02) && s.MaxItems != nil {
			n = int(*s.MaxItems) + 1
		}
		list := make([]any, n)
		for i := range list {
			list[i] = g.value(s.Items.Value, depth+1, raws)
		}
		return list
	case s.Type.Is(openapi3.TypeInteger):
		return g.intIn(s)
	case s.Type.Is(openapi3.TypeNumber):
		return g.R.Float64() * 1000
	case s.Type.Is(openapi3.TypeBoolean):
		return g.chance(0.5)
	}
	v := g.validString("", s)
	if g.chance(0.1) {
		v = g.mutateString(v)
	}
	return v
}

// propertyValue uses a fixture id for properties that name one.
func (g *Generator) propertyValue(name string, s *openapi3.Schema, depth int, raws *[]string) any {
	if ids := g.Fix.IDs[name]; len(ids) > 0 && g.chance(0.8) {
		return g.pick(ids)
	}
	if values := g.Fix.Values[name]; len(values) > 0 && g.chance(0.7) {
		return values[g.R.IntN(len(values))]
	}
	return g.value(s, depth+1, raws)
}
