package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/wire"
)

// One rule for text at the edge: every path parameter, query parameter (name and value), header parameter the
// operation declares, and every string (and object key) of a JSON body must be text a PostgreSQL text column can
// hold — valid UTF-8 without NUL (persistence.TextProblem) — or the request answers 400 InvalidParameter naming
// it. Applied by the Validator before anything else reads the request, so that no handler, store or fast path
// sees such text, and none needs a check of its own.

// paramTextProblem checks the request's parameters and returns the error for the first bad one (nil: all fine).
func paramTextProblem(c *gin.Context, headers []headerParam) *fault.Error {
	for _, p := range c.Params {
		if why := persistence.TextProblem(p.Value); why != "" {
			return fault.InvalidParameter("%s: %s", p.Key, why)
		}
	}
	if err := queryTextProblem(c.Request.URL.RawQuery); err != nil {
		return err
	}
	for _, h := range headers {
		for _, v := range c.Request.Header[h.key] {
			if why := persistence.TextProblem(v); why != "" {
				return fault.InvalidParameter("%s: %s", h.name, why)
			}
		}
	}
	return nil
}

// queryTextProblem checks the decoded query. A query with no escapes and only ASCII bytes (the hot path's
// ?limit=32&timeoutInSeconds=20) decodes to itself: it is not parsed here.
func queryTextProblem(raw string) *fault.Error {
	plain := true
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c == '%' || c >= utf8.RuneSelf || c == 0 {
			plain = false
			break
		}
	}
	if plain {
		return nil
	}
	values, _ := url.ParseQuery(raw) // malformed pairs are dropped here as by every reader of the query
	for name, vs := range values {
		if why := persistence.TextProblem(name); why != "" {
			return fault.InvalidParameter("query: a parameter name %s", why)
		}
		for _, v := range vs {
			if why := persistence.TextProblem(v); why != "" {
				return fault.InvalidParameter("%s: %s", name, why)
			}
		}
	}
	return nil
}

// headerParam is a header parameter an operation declares: its name as the spec spells it, and its key in
// http.Header (canonical, looked up without canonicalizing it per request).
type headerParam struct{ name, key string }

// headerParams lists the header parameters an operation declares (their values are checked by the rule).
func headerParams(r *route) []headerParam {
	var out []headerParam
	add := func(in, name string) {
		key := http.CanonicalHeaderKey(name)
		if in == "header" && !slices.ContainsFunc(out, func(h headerParam) bool { return h.key == key }) {
			out = append(out, headerParam{name: name, key: key})
		}
	}
	for _, p := range r.PathItem.Parameters {
		add(p.Value.In, p.Value.Name)
	}
	for _, p := range r.Operation.Parameters {
		add(p.Value.In, p.Value.Name)
	}
	return out
}

// JSONTextProblem (the rule for JSON bodies, and for the frames of watches) finds a JSON string or key in body that is not valid UTF-8 (raw bytes, or an escaped surrogate
// without its pair, which encoding/json would silently turn into U+FFFD) or that holds NUL (\u0000), and returns
// the error naming its field (messages.0.content; the object for a key). Bodies that plainly hold neither are not
// walked. A body that is not JSON is left to the validator's own error.
func JSONTextProblem(body []byte) *fault.Error {
	if utf8.Valid(body) && !bytes.Contains(body, []byte(`\u0000`)) && !bytes.Contains(body, []byte(`\ud`)) &&
		!bytes.Contains(body, []byte(`\uD`)) {
		return nil
	}
	type level struct {
		object bool
		atKey  bool // an object whose next token is a key
		key    string
		index  int
	}
	var stack []level
	field := func(isKey bool) string {
		var parts []string
		for i, l := range stack {
			switch {
			case !l.object:
				parts = append(parts, strconv.Itoa(l.index))
			case !(isKey && i == len(stack)-1):
				parts = append(parts, l.key)
			}
		}
		if len(parts) == 0 {
			return "body"
		}
		return strings.Join(parts, ".")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			if !utf8.Valid(body) {
				return fault.InvalidParameter("body: must be valid UTF-8")
			}
			return nil // the end, or not JSON: the validator words that
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].atKey = true
			}
			continue
		}
		var top *level
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		isKey := top != nil && top.object && top.atKey
		if top != nil && !top.object {
			top.index++
		}
		if s, ok := tok.(string); ok {
			if why := wire.StringProblem(body[start:dec.InputOffset()]); why != "" {
				return fault.InvalidParameter("%s: %s", field(isKey), why)
			}
			if isKey {
				top.key, top.atKey = s, false
				continue
			}
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, level{object: d == '{', atKey: d == '{', index: -1})
			continue
		}
		if top != nil && top.object {
			top.atKey = true
		}
	}
}
