package openapi

// The Makefile's generate target runs the same commands; go generate is a convenience for editors.
//go:generate sh -c "cd .. && go tool oapi-codegen -config openapi/api/config.yaml openapi/openapi.yaml"
//go:generate sh -c "cd .. && go tool oapi-codegen -config openapi/sdk/config.yaml openapi/openapi.yaml"
