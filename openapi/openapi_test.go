package openapi

import (
	"bytes"
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/openapi/api"
)

// loadSpec parses and validates the embedded document the way the server does.
func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(Spec)
	if err != nil {
		t.Fatalf("load spec: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate spec: %v", err)
	}
	return doc
}

func requiresAuth(doc *openapi3.T, op *openapi3.Operation) bool {
	if op.Security != nil {
		return len(*op.Security) > 0
	}
	return len(doc.Security) > 0
}

func TestSpecIsValid(t *testing.T) {
	loadSpec(t)
}

func TestEveryOperationIsDocumented(t *testing.T) {
	doc := loadSpec(t)
	seen := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s: no operationId", where)
			} else if seen[op.OperationID] {
				t.Errorf("%s: duplicate operationId %s", where, op.OperationID)
			}
			seen[op.OperationID] = true
			if len(op.Tags) == 0 || op.Summary == "" || op.Description == "" {
				t.Errorf("%s: needs tags, a summary and a description", where)
			}
			for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
				if p.Value.Description == "" {
					t.Errorf("%s: parameter %s has no description", where, p.Value.Name)
				}
			}
			if !slices.ContainsFunc(op.Parameters, func(p *openapi3.ParameterRef) bool {
				return p.Value.In == openapi3.ParameterInHeader && p.Value.Name == "opc-request-id"
			}) {
				t.Errorf("%s: does not accept the opc-request-id header", where)
			}
			if requiresAuth(doc, op) {
				// /20160918 is OCI Identity's version, for its compartment operations.
				if !strings.HasPrefix(path, "/20210201/") && !strings.HasPrefix(path, "/20160918/") {
					t.Errorf("%s: authenticated paths must start with /20210201/ or /20160918/", where)
				}
				for _, code := range []int{400, 401, 404, 429, 500} {
					if op.Responses.Status(code) == nil {
						t.Errorf("%s: no %d response", where, code)
					}
				}
			}
			for code, resp := range op.Responses.Map() {
				if resp.Value.Headers["opc-request-id"] == nil {
					t.Errorf("%s %s: response does not document opc-request-id", where, code)
				}
				if code == "202" && resp.Value.Headers["opc-work-request-id"] == nil {
					t.Errorf("%s %s: 202 does not document opc-work-request-id", where, code)
				}
				if code == "429" && resp.Value.Headers["retry-after"] == nil {
					t.Errorf("%s %s: 429 does not document retry-after", where, code)
				}
			}
		}
	}
	want := []string{
		"CreateCompartment", "GetCompartment", "ListCompartments", "UpdateCompartment", "DeleteCompartment",
		"CreateQueue", "GetQueue", "ListQueues", "UpdateQueue", "DeleteQueue", "ChangeQueueCompartment",
		"PurgeQueue", "GetWorkRequest", "ListWorkRequests", "PutMessages", "GetMessages", "DeleteMessage",
		"DeleteMessages", "UpdateMessage", "UpdateMessages", "GetStats", "ListChannels", "RedriveMessages",
		"Healthz", "Readyz", "Metrics", "GetOpenAPISpec",
	}
	for _, id := range want {
		if !seen[id] {
			t.Errorf("operation %s is missing", id)
		}
	}
}

// Users read property descriptions in the SDK docs, so every property must have one.
func TestEverySchemaPropertyIsDescribed(t *testing.T) {
	doc := loadSpec(t)
	for name, schema := range doc.Components.Schemas {
		if schema.Value.Description == "" {
			t.Errorf("schema %s: no description", name)
		}
		for prop, ref := range schema.Value.Properties {
			if ref.Value.Description == "" {
				t.Errorf("schema %s: property %s: no description", name, prop)
			}
		}
	}
}

// gin panics at registration when two routes use different wildcard names at the same position.
func TestGinRoutesRegister(t *testing.T) {
	gin.SetMode(gin.TestMode)
	router := gin.New()
	api.RegisterHandlers(router, api.ServerInterface(nil))
	want := 0 // one route per operation of the spec
	for _, item := range loadSpec(t).Paths.Map() {
		want += len(item.Operations())
	}
	if got := len(router.Routes()); got != want {
		t.Errorf("registered %d routes, want %d", got, want)
	}
}

func TestEmbeddedSpecsAgree(t *testing.T) {
	generated, err := api.GetSwagger()
	if err != nil {
		t.Fatalf("api.GetSwagger: %v", err)
	}
	doc := loadSpec(t)
	if got, want := len(generated.Paths.Map()), len(doc.Paths.Map()); got != want {
		t.Errorf("generated spec has %d paths, openapi.yaml %d: regenerate", got, want)
	}
}

// The validator is what enforces ranges, patterns and unknown fields; these cases pin that the spec says what the
// handlers rely on.
func TestRequestValidation(t *testing.T) {
	doc := loadSpec(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	const queue = "/20210201/queues/ocid1.queue.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	const compartment = "ocid1.compartment.ferry.local.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	cases := []struct {
		name, method, target, body string
		ok                         bool
	}{
		{"put string and number attributes", "POST", queue + "/messages",
			`{"messages":[{"content":"hi","attributes":{"a":"x","b":4.5},"metadata":{"channelId":"c1"}}]}`, true},
		{"put boolean attribute", "POST", queue + "/messages",
			`{"messages":[{"content":"hi","attributes":{"a":true}}]}`, false},
		{"put unknown field", "POST", queue + "/messages", `{"messages":[{"content":"hi","colour":"red"}]}`, false},
		{"put empty batch", "POST", queue + "/messages", `{"messages":[]}`, false},
		{"put wildcard channel", "POST", queue + "/messages",
			`{"messages":[{"content":"hi","metadata":{"channelId":"a*"}}]}`, false},
		{"get messages", "GET", queue + "/messages?limit=32&channelFilter=orders-*&dlq=true", "", true},
		{"get too many messages", "GET", queue + "/messages?limit=33", "", false},
		{"bad queue ocid", "GET", "/20210201/queues/not-an-ocid", "", false},
		{"create queue", "POST", "/20210201/queues",
			`{"displayName":"q","compartmentId":"` + compartment + `","retentionInSeconds":60}`, true},
		{"create queue retention too short", "POST", "/20210201/queues",
			`{"displayName":"q","compartmentId":"` + compartment + `","retentionInSeconds":9}`, false},
		{"update queue retention", "PUT", queue, `{"retentionInSeconds":60}`, false},
		{"list queues without compartment (OCI allows it)", "GET", "/20210201/queues", "", true},
		{"list compartments without compartment", "GET", "/20210201/compartments", "", false},
		{"purge bad type", "POST", queue + "/actions/purge", `{"purgeType":"ALL"}`, false},
		{"redrive with defaults", "POST", queue + "/actions/redrive", `{}`, true},
		{"delete messages", "POST", queue + "/messages/actions/deleteMessages", `{"entries":[{"receipt":"r1"}]}`, true},
		{"update message", "PUT", queue + "/messages/r1", `{"visibilityInSeconds":0}`, true},
		{"create compartment bad name", "POST", "/20210201/compartments",
			`{"compartmentId":"` + compartment + `","name":"has space"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, bytes.NewBufferString(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			route, pathParams, err := router.FindRoute(req)
			if err != nil {
				if tc.ok {
					t.Fatalf("find route: %v", err)
				}
				return // an unmatched path (e.g. a malformed OCID) is a rejection too
			}
			err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
				Request:    req,
				PathParams: pathParams,
				Route:      route,
				Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
			})
			if tc.ok && err != nil {
				t.Errorf("rejected: %v", err)
			}
			if !tc.ok {
				if err == nil {
					t.Errorf("accepted, want rejected")
				} else {
					t.Logf("rejected as expected: %v", err)
				}
			}
		})
	}
}
