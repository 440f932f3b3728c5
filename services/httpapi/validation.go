package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/services/apierror"
)

// Validator checks every request against the OpenAPI operation that gin routed it to: path, query and header
// parameters, and the JSON body (types, ranges, enums, required and unknown fields). Defaults from the spec are
// written back into the request.
type Validator struct {
	routes map[string]*routers.Route // "METHOD /gin/:path" → operation
	opts   *openapi3filter.Options
}

// NewValidator indexes the spec's operations by their gin route.
func NewValidator(doc *openapi3.T) *Validator {
	v := &Validator{
		routes: map[string]*routers.Route{},
		opts: &openapi3filter.Options{
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, // iam authenticates before validation
			// Error strings must name the field and the reason, not dump the schema.
			SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()},
		},
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			v.routes[method+" "+GinPath(path)] = &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op}
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
		params := make(map[string]string, len(c.Params))
		for _, p := range c.Params {
			params[p.Key] = p.Value
		}
		input := &openapi3filter.RequestValidationInput{Request: c.Request, PathParams: params, Route: route, Options: v.opts}
		if err := openapi3filter.ValidateRequest(c.Request.Context(), input); err != nil {
			apierror.Write(c, TranslateValidationError(err))
			return
		}
		c.Next()
	}
}

// TranslateValidationError turns a kin-openapi error into InvalidParameter/MissingParameter naming the field.
func TranslateValidationError(err error) *apierror.Error {
	if IsTooLarge(err) {
		return apierror.PayloadTooLarge("the request body is too large")
	}
	var reqErr *openapi3filter.RequestError
	if !errors.As(err, &reqErr) {
		return apierror.InvalidParameter("%s", err.Error())
	}
	field := "body"
	if reqErr.Parameter != nil {
		field = reqErr.Parameter.Name
	}
	if errors.Is(reqErr.Err, openapi3filter.ErrInvalidRequired) || errors.Is(reqErr.Err, openapi3filter.ErrInvalidEmptyValue) {
		if reqErr.Parameter != nil {
			return apierror.MissingParameter("%s: is required", field)
		}
		return apierror.MissingParameter("body: a request body is required")
	}
	var schemaErr *openapi3.SchemaError
	if errors.As(reqErr.Err, &schemaErr) {
		if ptr := schemaErr.JSONPointer(); len(ptr) > 0 {
			if reqErr.Parameter != nil {
				field += "." + strings.Join(ptr, ".")
			} else {
				field = strings.Join(ptr, ".")
			}
		}
		reason := schemaErr.Reason
		if strings.HasPrefix(reason, "property ") && strings.HasSuffix(reason, " is missing") {
			name := strings.Trim(strings.TrimSuffix(strings.TrimPrefix(reason, "property "), " is missing"), `"`)
			return apierror.MissingParameter("%s: is required", joinField(field, name, reqErr.Parameter == nil && len(schemaErr.JSONPointer()) == 0))
		}
		if strings.HasPrefix(reason, "property ") && strings.HasSuffix(reason, " is unsupported") {
			name := strings.Trim(strings.TrimSuffix(strings.TrimPrefix(reason, "property "), " is unsupported"), `"`)
			return apierror.InvalidParameter("%s: unknown field", joinField(field, name, reqErr.Parameter == nil && len(schemaErr.JSONPointer()) == 0))
		}
		return apierror.InvalidParameter("%s: %s", field, reason)
	}
	var parseErr *openapi3filter.ParseError
	if errors.As(reqErr.Err, &parseErr) {
		if reqErr.Parameter == nil {
			return apierror.InvalidParameter("body: the request body is not valid JSON (%s)", rootCause(parseErr))
		}
		return apierror.InvalidParameter("%s: %s", field, rootCause(parseErr))
	}
	if reqErr.Parameter == nil && strings.Contains(reqErr.Error(), "header Content-Type") {
		return apierror.InvalidParameter("content-type: the request body must be application/json")
	}
	reason := reqErr.Reason
	if reason == "" && reqErr.Err != nil {
		reason = reqErr.Err.Error()
	}
	return apierror.InvalidParameter("%s: %s", field, reason)
}

func joinField(parent, name string, root bool) string {
	if root {
		return name
	}
	return parent + "." + name
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
