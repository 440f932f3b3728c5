package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// addError reports err of an operation on a resource type as a diagnostic: on the attribute the API's message
// names when the resource has one (so Terraform points at the line of the configuration), else on the resource,
// with a hint for the answers whose cause is not in the message.
func addError(diags *diag.Diagnostics, summary string, err error, attributes map[string]bool) {
	detail := err.Error()
	var e *apiError
	if errors.As(err, &e) {
		switch e.status {
		case http.StatusUnauthorized:
			detail += "\n\nThe token was refused: check the provider's token (or FERRY_TOKEN); it may have expired."
		case http.StatusNotFound:
			detail += "\n\nferry answers 404 both for a resource that does not exist and for one the token's principal " +
				"may not see or change: check the OCIDs, and the policies that grant the token's groups access."
		case http.StatusPreconditionFailed:
			detail += "\n\nThe resource was changed outside Terraform since Terraform last read it, so the change " +
				"was not applied. Run terraform plan again to see the current state."
		}
		if attr := snakeCase(e.field()); attributes[attr] {
			diags.AddAttributeError(path.Root(attr), summary, detail)
			return
		}
	}
	diags.AddError(summary, detail)
}

// snakeCase is the Terraform attribute name of an API field (displayName → display_name).
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// The private state of a resource keeps what Terraform's state should not show: the etag read last, sent as
// if-match with the next change so that a change made outside Terraform since is a conflict, not overwritten.
const privateETag = "etag"

// privateState is the part of the framework's private state that resources use (Create/Read/Update responses and
// requests all offer it).
type privateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// setPrivate stores v as JSON (the framework's private state holds JSON values) under key.
func setPrivate(ctx context.Context, p privateState, key string, v any) diag.Diagnostics {
	b, err := json.Marshal(v)
	if err != nil {
		var d diag.Diagnostics
		d.AddError("Cannot keep private state", err.Error())
		return d
	}
	return p.SetKey(ctx, key, b)
}

// getPrivate reads key into v; a key never set leaves v as it is.
func getPrivate(ctx context.Context, p privateState, key string, v any) diag.Diagnostics {
	b, diags := p.GetKey(ctx, key)
	if diags.HasError() || len(b) == 0 {
		return diags
	}
	if err := json.Unmarshal(b, v); err != nil {
		diags.AddError("Cannot read private state", err.Error())
	}
	return diags
}

// ifMatch is the etag kept in private state, as an if-match header (nil when none was kept: the change is then
// unconditional, as for a resource in a state written before etags were kept).
func ifMatch(ctx context.Context, p privateState, diags *diag.Diagnostics) *string {
	var etag string
	diags.Append(getPrivate(ctx, p, privateETag, &etag)...)
	if etag == "" {
		return nil
	}
	return &etag
}

// timeString is how the provider writes the API's times: RFC 3339 in UTC.
func timeString(t time.Time) types.String { return types.StringValue(t.UTC().Format(time.RFC3339Nano)) }

// tagsValue is freeform tags as a Terraform map (empty, not null, when there are none: the attribute defaults to
// the empty map, so that no tags in the configuration and none on the server agree).
func tagsValue(tags map[string]string) types.Map {
	elems := make(map[string]attr.Value, len(tags))
	for k, v := range tags {
		elems[k] = types.StringValue(v)
	}
	return types.MapValueMust(types.StringType, elems)
}

// tagsOf is a Terraform map of freeform tags in the API's shape (an empty map clears the tags).
func tagsOf(ctx context.Context, m types.Map, diags *diag.Diagnostics) *sdk.FreeformTags {
	tags := sdk.FreeformTags{}
	if m.IsNull() || m.IsUnknown() {
		return &tags
	}
	diags.Append(m.ElementsAs(ctx, &tags, false)...)
	return &tags
}

// stringsValue is a list of strings as a Terraform list.
func stringsValue(list []string) types.List {
	elems := make([]attr.Value, len(list))
	for i, s := range list {
		elems[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, elems)
}

// optionalInt64 is an optional integer of the API as a Terraform value (null when absent).
func optionalInt64(n *int) types.Int64 {
	if n == nil {
		return types.Int64Null()
	}
	return types.Int64Value(int64(*n))
}

// intPtr is a known Terraform integer as the API's optional int (nil when null).
func intPtr(v types.Int64) *int {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	n := int(v.ValueInt64())
	return &n
}

// configure hands a resource or data source the provider's client (nil until the provider is configured, as
// during validation).
func configure(data any, diags *diag.Diagnostics) *client {
	if data == nil {
		return nil
	}
	c, ok := data.(*client)
	if !ok {
		diags.AddError("Unexpected provider data", "the ferry provider passed an unexpected type to a resource")
		return nil
	}
	return c
}

// deleted reports a lifecycle state of a resource that is gone or going: Read removes such a resource from the
// state (as it does one answered 404), so that the next plan creates it again.
func deleted(state sdk.LifecycleState) bool {
	return state == sdk.LifecycleStateDELETED || state == sdk.LifecycleStateDELETING
}

// importByID is the ImportState of every ferry resource: the argument of terraform import is the OCID.
func importByID(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
