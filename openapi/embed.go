// Package openapi holds ferry's OpenAPI document, the source of truth for the REST API, and the code generated
// from it: the gin server interface in package api and the public Go SDK in package sdk.
//
// Regenerate both (from the repository root) with:
//
//	go tool oapi-codegen -config openapi/api/config.yaml openapi/openapi.yaml
//	go tool oapi-codegen -config openapi/sdk/config.yaml openapi/openapi.yaml
package openapi

import _ "embed"

// Spec is the raw OpenAPI 3.0 document (YAML) as written in openapi.yaml. The server serves it at
// GET /openapi.yaml and validates every request against it.
//
//go:embed openapi.yaml
var Spec []byte
