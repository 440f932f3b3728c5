package provider

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/ferry-mq/ferry/openapi"
)

// The schemas' ranges, lengths, patterns, defaults and descriptions are read from openapi.yaml (embedded in the
// openapi package), the one place the API states them: the provider never writes an API limit twice, plan-time
// validation agrees with the server's, and the generated documentation says what the API reference says.

// apiSpec is the parsed specification, loaded once per provider process.
var apiSpec = sync.OnceValue(func() *openapi3.T {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		panic(fmt.Sprintf("ferry provider: the embedded openapi.yaml does not parse: %v", err))
	}
	return doc
})

// apiField is one property of a schema of openapi.yaml: its description (the property's own, else its schema's)
// and the constraints of the schema it resolves to (through a lone allOf, the spec's way to describe a $ref).
type apiField struct {
	where       string // "Schema.property", for messages
	description string
	schema      *openapi3.Schema
}

// field looks up schemaName.property in the spec; a missing one is a programming error (the tests build every
// schema), so it panics with the place.
func field(schemaName, property string) apiField {
	s, ok := apiSpec().Components.Schemas[schemaName]
	if !ok || s.Value == nil {
		panic("ferry provider: openapi.yaml has no schema " + schemaName)
	}
	p, ok := s.Value.Properties[property]
	if !ok || p.Value == nil {
		panic(fmt.Sprintf("ferry provider: openapi.yaml has no property %s.%s", schemaName, property))
	}
	f := apiField{where: schemaName + "." + property, description: p.Value.Description, schema: p.Value}
	if len(p.Value.AllOf) == 1 && p.Value.AllOf[0].Value != nil {
		f.schema = p.Value.AllOf[0].Value
		if f.description == "" {
			f.description = f.schema.Description
		}
	}
	if f.description == "" {
		f.description = f.schema.Description
	}
	return f
}

// describe is the field's description in one paragraph, followed by the provider's notes.
func (f apiField) describe(notes ...string) string {
	parts := append([]string{strings.Join(strings.Fields(f.description), " ")}, notes...)
	return strings.TrimSpace(strings.Join(parts, " "))
}

// intBounds is the field's minimum and maximum; a field without both has no range to check, which for the
// settings that call it is a mistake.
func (f apiField) intBounds() (lo, hi int64) {
	if f.schema.Min == nil || f.schema.Max == nil {
		panic("ferry provider: openapi.yaml gives " + f.where + " no minimum and maximum")
	}
	return int64(*f.schema.Min), int64(*f.schema.Max)
}

// int64Validators checks the field's range at plan time.
func (f apiField) int64Validators() []validator.Int64 {
	lo, hi := f.intBounds()
	return []validator.Int64{int64validator.Between(lo, hi)}
}

// int64Default is the spec's default of the field (what the server applies when it is absent).
func (f apiField) int64Default() int64 {
	d, ok := f.schema.Default.(float64)
	if !ok || d != math.Trunc(d) {
		panic("ferry provider: openapi.yaml gives " + f.where + " no integer default")
	}
	return int64(d)
}

// boolDefault is the spec's default of a boolean field.
func (f apiField) boolDefault() bool {
	d, ok := f.schema.Default.(bool)
	if !ok {
		panic("ferry provider: openapi.yaml gives " + f.where + " no boolean default")
	}
	return d
}

// stringValidators checks the field's length and pattern at plan time.
func (f apiField) stringValidators() []validator.String { return stringChecks(f.schema) }

func stringChecks(s *openapi3.Schema) []validator.String {
	var out []validator.String
	if s.MaxLength != nil {
		out = append(out, stringvalidator.LengthBetween(int(s.MinLength), int(*s.MaxLength)))
	} else if s.MinLength > 0 {
		out = append(out, stringvalidator.LengthAtLeast(int(s.MinLength)))
	}
	if s.Pattern != "" {
		out = append(out, stringvalidator.RegexMatches(regexp.MustCompile(s.Pattern), "must match "+s.Pattern))
	}
	return out
}

// mapValidators checks a string map's size and its values' lengths (freeform tags).
func (f apiField) mapValidators() []validator.Map {
	var out []validator.Map
	if f.schema.MaxProps != nil {
		out = append(out, mapvalidator.SizeAtMost(int(*f.schema.MaxProps)))
	}
	if v := f.schema.AdditionalProperties.Schema; v != nil && v.Value != nil {
		if checks := stringChecks(v.Value); len(checks) > 0 {
			out = append(out, mapvalidator.ValueStringsAre(checks...))
		}
	}
	return out
}

// listValidators checks a string list's size and its items (a policy's statements).
func (f apiField) listValidators() []validator.List {
	var out []validator.List
	if f.schema.MaxItems != nil {
		out = append(out, listvalidator.SizeBetween(int(f.schema.MinItems), int(*f.schema.MaxItems)))
	}
	if it := f.schema.Items; it != nil && it.Value != nil {
		if checks := stringChecks(it.Value); len(checks) > 0 {
			out = append(out, listvalidator.ValueStringsAre(checks...))
		}
	}
	return out
}

// ocidValidators checks an attribute that names a resource by OCID (the spec's Ocid pattern and length).
func ocidValidators() []validator.String {
	s, ok := apiSpec().Components.Schemas["Ocid"]
	if !ok || s.Value == nil {
		panic("ferry provider: openapi.yaml has no schema Ocid")
	}
	return stringChecks(s.Value)
}
