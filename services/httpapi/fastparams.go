package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
)

// fastParams checks an operation's parameters without kin-openapi's generic decoding, when every parameter's
// schema is simple: an integer with inclusive bounds, a boolean, or a string with lengths, an enum and a pattern
// (the pattern through kin-openapi's own schema check). It accepts only what kin-openapi accepts, and applies the
// spec's query defaults as kin-openapi writes them; anything else (a value out of range or unusual in form, a
// missing required parameter) goes to kin-openapi, which judges it and words the error. kin-openapi's parameter
// validation was ~5 % of the data plane's CPU, mostly its generic decoding.
type fastParams []fastParam

type fastParam struct {
	name   string
	in     string
	schema *openapi3.Schema
	// required: a request without it goes to kin-openapi (for its error).
	required bool
	// def is the default as kin-openapi writes it into the query (fmt.Sprint), "" = none.
	def string
	// pattern is the schema's pattern compiled as kin-openapi compiles it (nil: none, or one that needs
	// kin-openapi's rewriting, which then checks it); matching it directly costs a fraction of a schema visit.
	pattern *regexp.Regexp
}

// newFastParams returns the checks of an operation's parameters (those of its path item that it does not
// override, then its own: kin-openapi's order), or nil when one of them is not simple.
func newFastParams(item *openapi3.PathItem, op *openapi3.Operation) fastParams {
	var params []*openapi3.Parameter
	for _, ref := range item.Parameters {
		if op.Parameters == nil || op.Parameters.GetByInAndName(ref.Value.In, ref.Value.Name) == nil {
			params = append(params, ref.Value)
		}
	}
	for _, ref := range op.Parameters {
		params = append(params, ref.Value)
	}
	out := make(fastParams, 0, len(params))
	for _, p := range params {
		if p.Content != nil || p.Schema == nil || p.Schema.Value == nil || !simpleSchema(p.Schema.Value) ||
			p.AllowEmptyValue || (p.Style != "" && p.Style != openapi3.SerializationForm && p.Style != openapi3.SerializationSimple) {
			return nil
		}
		fp := fastParam{name: p.Name, in: p.In, schema: p.Schema.Value, required: p.Required}
		if pat := p.Schema.Value.Pattern; pat != "" && !strings.Contains(pat, `\u`) {
			fp.pattern, _ = regexp.Compile(pat) // kin-openapi's own compilation, but for its \uXXXX rewriting
		}
		if def := p.Schema.Value.Default; def != nil {
			if p.In != openapi3.ParameterInQuery {
				return nil
			}
			fp.def = fmt.Sprint(def)
		}
		switch p.In {
		case openapi3.ParameterInPath, openapi3.ParameterInQuery, openapi3.ParameterInHeader:
		default:
			return nil
		}
		out = append(out, fp)
	}
	return out
}

// simpleSchema: a schema fastParam can check.
func simpleSchema(s *openapi3.Schema) bool {
	if len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || s.Not != nil || s.Type == nil || len(*s.Type) != 1 {
		return false
	}
	switch {
	case s.Type.Is(openapi3.TypeInteger):
		return (s.Format == "" || s.Format == "int32" || s.Format == "int64") && s.MultipleOf == nil && len(s.Enum) == 0 &&
			!s.ExclusiveMin.IsSet() && !s.ExclusiveMax.IsSet()
	case s.Type.Is(openapi3.TypeBoolean):
		return len(s.Enum) == 0
	case s.Type.Is(openapi3.TypeString):
		return s.Format == "" && slices.IndexFunc(s.Enum, func(v any) bool { _, ok := v.(string); return !ok }) < 0
	}
	return false
}

// check reports whether the request's parameters pass (ok), applying the query defaults; false leaves the request
// unchanged for kin-openapi.
func (f fastParams) check(req *http.Request, pathParams map[string]string) bool {
	var query url.Values
	var defaults []*fastParam
	for i := range f {
		p := &f[i]
		var value string
		var n int
		switch p.in {
		case openapi3.ParameterInPath:
			if v, ok := pathParams[p.name]; ok {
				value, n = v, 1
			}
		case openapi3.ParameterInQuery:
			if query == nil {
				query = req.URL.Query()
			}
			values := query[p.name]
			if n = len(values); n > 0 {
				value = values[0]
			}
		case openapi3.ParameterInHeader:
			values := req.Header.Values(p.name)
			if n = len(values); n > 0 {
				value = values[0]
			}
		}
		switch {
		case n == 0 && p.required:
			return false
		case n == 0:
			if p.def != "" {
				defaults = append(defaults, p)
			}
		case n > 1 || value == "" || !p.accepts(value):
			return false
		}
	}
	if len(defaults) > 0 {
		for _, p := range defaults {
			query.Del(p.name)
			query.Add(p.name, p.def)
		}
		req.URL.RawQuery = query.Encode()
	}
	return true
}

// accepts reports whether kin-openapi surely accepts value (conservatively: plain decimal integers, true/false).
func (p *fastParam) accepts(value string) bool {
	s := p.schema
	switch {
	case s.Type.Is(openapi3.TypeInteger):
		digits := value
		if digits[0] == '-' {
			digits = digits[1:]
		}
		if len(digits) == 0 || len(digits) > 9 || digits[0] == '0' && len(digits) > 1 {
			return false
		}
		for i := 0; i < len(digits); i++ {
			if digits[i] < '0' || digits[i] > '9' {
				return false
			}
		}
		v, _ := strconv.Atoi(value)
		return (s.Min == nil || float64(v) >= *s.Min) && (s.Max == nil || float64(v) <= *s.Max)
	case s.Type.Is(openapi3.TypeBoolean):
		return value == "true" || value == "false"
	case s.Type.Is(openapi3.TypeString):
		if !utf8.ValidString(value) {
			return false
		}
		if n := uint64(utf8.RuneCountInString(value)); n < s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			return false
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, any(value)) {
			return false
		}
		switch {
		case s.Pattern == "":
			return true
		case p.pattern != nil:
			return p.pattern.MatchString(value)
		}
		return s.VisitJSON(value) == nil
	}
	return false
}
