package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/wire"
)

// decodedBodyKey holds the body a fast decoder produced (wire.FastDecoders), in the gin context.
const decodedBodyKey = "ferry.httpapi.decodedBody"

// DecodedBody returns the request body as decoded by the validator's fast path (ok false when the request took the
// kin-openapi path: the handler decodes the body itself).
func DecodedBody[T any](c *gin.Context) (*T, bool) {
	v, ok := c.Get(decodedBodyKey)
	if !ok {
		return nil, false
	}
	body, ok := v.(*T)
	return body, ok
}

// Validator checks every request against the OpenAPI operation that gin routed it to: path, query and header
// parameters, and the JSON body (types, ranges, enums, required and unknown fields). Defaults from the spec are
// written back into the request.
type Validator struct {
	routes map[string]*route // "METHOD /gin/:path" → operation
	opts   *openapi3filter.Options
	// paramOpts validate everything but the body, for bodies a fast decoder accepted (wire.FastDecoders).
	paramOpts *openapi3filter.Options
	// noFastPath disables the fast decoders (tests compare the two paths).
	noFastPath bool
}

type route struct {
	*routers.Route
	// fast decodes and checks the body of a hot operation (wire.FastDecoders); json is the operation's
	// application/json content, the only one the fast path takes.
	fast func(body []byte) (any, bool)
	json *openapi3.MediaType
	// params checks the parameters without kin-openapi when they are simple (fastparams.go); nil = kin-openapi.
	params fastParams
	// headers are the header parameters the operation declares (their text is checked: text.go).
	headers []headerParam
}

// NewValidator indexes the spec's operations by their gin route.
func NewValidator(doc *openapi3.T) *Validator {
	v := &Validator{
		routes: map[string]*route{},
		opts: &openapi3filter.Options{
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, // iam authenticates before validation
			// Error strings must name the field and the reason, not dump the schema.
			SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()},
		},
	}
	params := *v.opts
	params.ExcludeRequestBody = true
	v.paramOpts = &params
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			// iam authenticates every request before validation, and the spec's schemes are checked when it is
			// loaded: kin-openapi's own security check (a no-op AuthenticationFunc) would only copy the body once
			// more, so the operation is validated without its security requirements.
			validated := *op
			validated.Security = &openapi3.SecurityRequirements{}
			r := &route{Route: &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: &validated},
				params: newFastParams(item, op)}
			if fast := wire.FastDecoders[op.OperationID]; fast != nil && op.RequestBody != nil && op.RequestBody.Value != nil {
				r.fast, r.json = fast, op.RequestBody.Value.Content.Get("application/json")
			}
			r.headers = headerParams(r)
			v.routes[method+" "+GinPath(path)] = r
		}
	}
	return v
}

// GinPath turns an OpenAPI path template (/queues/{queueId}) into gin's (/queues/:queueId).
func GinPath(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			parts[i] = ":" + p[1:len(p)-1]
		}
	}
	return strings.Join(parts, "/")
}

// Middleware validates the request; an invalid one answers 400 (413 when the body is too large).
func (v *Validator) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		route := v.routes[c.Request.Method+" "+c.FullPath()]
		if route == nil {
			c.Next()
			return
		}
		// The one rule for text (text.go), before anything reads the request.
		if err := paramTextProblem(c, route.headers); err != nil {
			apierror.Write(c, err)
			return
		}
		params := make(map[string]string, len(c.Params))
		for _, p := range c.Params {
			params[p.Key] = p.Value
		}
		body, isJSON, err := readJSONBody(c.Request)
		if err != nil {
			if isTimeout(err) {
				c.Header("Connection", "close") // the rest of the body may still be on its way
				err = apierror.New(http.StatusRequestTimeout, "RequestTimeout", "the request body did not arrive within the body read timeout")
			}
			apierror.Write(c, err)
			return
		}
		if body != nil {
			endBodyRead(c)
		}
		if decoded, ok := v.fastBody(route, c.Request, body, isJSON); ok {
			// The body is valid (and free of trailing data and NUL): the parameters remain.
			if !v.fastParams(route, c.Request, params) {
				input := &openapi3filter.RequestValidationInput{Request: c.Request, PathParams: params, Route: route.Route, Options: v.paramOpts}
				if err := openapi3filter.ValidateRequest(c.Request.Context(), input); err != nil {
					apierror.Write(c, TranslateValidationError(err))
					return
				}
			}
			c.Set(decodedBodyKey, decoded)
			c.Next()
			return
		}
		// The fast decoders accept only good text; any other body is checked here, before kin-openapi (whose
		// decoding would turn invalid UTF-8 into U+FFFD).
		if err := JSONTextProblem(body); err != nil {
			apierror.Write(c, err)
			return
		}
		// An operation without a body (GetMessages) whose parameters pass needs nothing of kin-openapi.
		if route.Operation.RequestBody != nil || !v.fastParams(route, c.Request, params) {
			input := &openapi3filter.RequestValidationInput{Request: c.Request, PathParams: params, Route: route.Route, Options: v.opts}
			if err := openapi3filter.ValidateRequest(c.Request.Context(), input); err != nil {
				apierror.Write(c, TranslateValidationError(err))
				return
			}
		}
		if len(body) > 0 && !json.Valid(body) {
			// kin-openapi (like encoding/json's Decoder) reads the first JSON value and ignores the rest, so a body
			// such as `{...}x` or `{...}{...}` would pass: reject it instead of acting on half of what was sent.
			apierror.Write(c, fault.InvalidParameter("body: the request body is not valid JSON (unexpected data after the top-level value)"))
			return
		}
		c.Next()
	}
}

// fastParams runs the operation's fast parameter check (fastparams.go); false sends the parameters through
// kin-openapi.
func (v *Validator) fastParams(r *route, req *http.Request, pathParams map[string]string) bool {
	return !v.noFastPath && r.params != nil && r.params.check(req, pathParams)
}

// fastBody runs the operation's fast decoder (wire.FastDecoders) on a plain application/json body; ok false sends the
// request through kin-openapi.
func (v *Validator) fastBody(r *route, req *http.Request, body []byte, isJSON bool) (any, bool) {
	if r.fast == nil || v.noFastPath || !isJSON || len(body) == 0 || r.json == nil ||
		r.Operation.RequestBody.Value.Content.Get(req.Header.Get("Content-Type")) != r.json {
		return nil, false
	}
	return r.fast(body)
}

// readJSONBody buffers a JSON request body (and puts it back for the validator and the handler). Bodies of other
// content types are left alone and return nil: the validator rejects the content type. isJSON reports a body of
// exactly application/json (parameters aside).
func readJSONBody(r *http.Request) (body []byte, isJSON bool, _ error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, false, nil
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType != "application/json" && !strings.HasSuffix(mediaType, "+json") {
		return nil, false, nil
	}
	body, err := readAll(r.Body, r.ContentLength)
	if err != nil {
		if IsTooLarge(err) {
			return nil, false, fault.PayloadTooLarge("the request body is too large")
		}
		if isTimeout(err) {
			return nil, false, err
		}
		return nil, false, fault.InvalidParameter("body: reading the request body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, mediaType == "application/json", nil
}

// isTimeout reports a read that passed the connection's read deadline (BodyReadDeadline).
func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// readAll reads a body in one allocation when its length is known (io.ReadAll grows its buffer step by step,
// copying a 2 MiB body several times over). A body shorter than announced fails as io.ReadAll fails on it.
func readAll(r io.Reader, length int64) ([]byte, error) {
	if length <= 0 || length > 64<<20 {
		return io.ReadAll(r)
	}
	buf := make([]byte, length)
	if n, err := io.ReadFull(r, buf); err != nil {
		return buf[:n], err
	}
	rest, err := io.ReadAll(r) // nothing, from net/http: it stops at the announced length
	if len(rest) > 0 {
		buf = append(buf, rest...)
	}
	return buf, err
}

// TranslateValidationError turns a kin-openapi error into InvalidParameter/MissingParameter naming the field.
func TranslateValidationError(err error) *fault.Error {
	if IsTooLarge(err) {
		return fault.PayloadTooLarge("the request body is too large")
	}
	var reqErr *openapi3filter.RequestError
	if !errors.As(err, &reqErr) {
		return fault.InvalidParameter("%s", err.Error())
	}
	if errors.Is(reqErr.Err, openapi3filter.ErrInvalidRequired) {
		if reqErr.Parameter != nil {
			return fault.MissingParameter("%s: is required", reqErr.Parameter.Name)
		}
		return fault.MissingParameter("body: a request body is required")
	}
	if errors.Is(reqErr.Err, openapi3filter.ErrInvalidEmptyValue) {
		switch {
		case reqErr.Parameter == nil:
			return fault.MissingParameter("body: a request body is required")
		case reqErr.Parameter.Required:
			return fault.MissingParameter("%s: is required", reqErr.Parameter.Name)
		}
		return fault.InvalidParameter("%s: must not be empty", reqErr.Parameter.Name)
	}
	var schemaErr *openapi3.SchemaError
	if errors.As(reqErr.Err, &schemaErr) {
		// allOf (how the spec attaches a description to a $ref) wraps the error that names the actual problem.
		for {
			var inner *openapi3.SchemaError
			if schemaErr.Origin == nil || !errors.As(schemaErr.Origin, &inner) || inner == schemaErr {
				break
			}
			schemaErr = inner
		}
		path := schemaErr.JSONPointer()
		reason := schemaErr.Reason
		if name, ok := propertyIn(reason, " is missing"); ok {
			return fault.MissingParameter("%s: is required", fieldName(reqErr.Parameter, appendOnce(path, name)))
		}
		if name, ok := propertyIn(reason, " is unsupported"); ok {
			return fault.InvalidParameter("%s: unknown field", fieldName(reqErr.Parameter, appendOnce(path, name)))
		}
		return fault.InvalidParameter("%s: %s", fieldName(reqErr.Parameter, path), reason)
	}
	var parseErr *openapi3filter.ParseError
	if errors.As(reqErr.Err, &parseErr) {
		if reqErr.Parameter == nil {
			return fault.InvalidParameter("body: the request body is not valid JSON (%s)", rootCause(parseErr))
		}
		return fault.InvalidParameter("%s: %s", reqErr.Parameter.Name, rootCause(parseErr))
	}
	if reqErr.Parameter == nil && strings.Contains(reqErr.Error(), "header Content-Type") {
		return fault.InvalidParameter("content-type: the request body must be application/json")
	}
	reason := reqErr.Reason
	if reason == "" && reqErr.Err != nil {
		reason = reqErr.Err.Error()
	}
	return fault.InvalidParameter("%s: %s", fieldName(reqErr.Parameter, nil), reason)
}

// propertyIn extracts the property name from kin-openapi's `property "x" is missing|unsupported` reasons.
func propertyIn(reason, suffix string) (string, bool) {
	rest, ok := strings.CutPrefix(reason, "property ")
	if !ok {
		return "", false
	}
	rest, ok = strings.CutSuffix(rest, suffix)
	return strings.Trim(rest, `"`), ok
}

// appendOnce appends name to the JSON pointer unless it already ends with it (kin-openapi includes a missing
// property in the pointer, but not an unsupported one).
func appendOnce(path []string, name string) []string {
	if len(path) > 0 && path[len(path)-1] == name {
		return path
	}
	return append(path, name)
}

// fieldName names the offending field: the parameter, then the path into its value (or into the body), joined
// with dots; "body" for the body as a whole.
func fieldName(param *openapi3.Parameter, path []string) string {
	var parts []string
	if param != nil {
		parts = append(parts, param.Name)
	}
	parts = append(parts, path...)
	if len(parts) == 0 {
		return "body"
	}
	return strings.Join(parts, ".")
}

func rootCause(err *openapi3filter.ParseError) string {
	if cause := err.RootCause(); cause != nil {
		return cause.Error()
	}
	return fmt.Sprint(err.Reason)
}

// NotFound answers unknown routes with the JSON error body.
func NotFound(c *gin.Context) {
	apierror.Write(c, apierror.New(http.StatusNotFound, "NotAuthorizedOrNotFound", "no such route: %s %s", c.Request.Method, c.Request.URL.Path))
}

// MethodNotAllowed answers a known path with the wrong method.
func MethodNotAllowed(c *gin.Context) {
	apierror.Write(c, apierror.New(http.StatusMethodNotAllowed, "MethodNotAllowed", "%s is not allowed on %s", c.Request.Method, c.Request.URL.Path))
}
