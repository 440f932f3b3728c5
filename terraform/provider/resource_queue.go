package provider

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// queueResource is ferry_queue, shaped after OCI's oci_queue_queue: every setting but the retention is changed
// in place (a new compartment_id moves the queue), and a deletion is waited for through its work request.
type queueResource struct{ client *client }

func newQueueResource() resource.Resource { return &queueResource{} }

// queueFields are a queue's attributes, shared by the resource and the ferry_queue data source.
type queueFields struct {
	ID                           types.String `tfsdk:"id"`
	CompartmentID                types.String `tfsdk:"compartment_id"`
	DisplayName                  types.String `tfsdk:"display_name"`
	VisibilityInSeconds          types.Int64  `tfsdk:"visibility_in_seconds"`
	TimeoutInSeconds             types.Int64  `tfsdk:"timeout_in_seconds"`
	RetentionInSeconds           types.Int64  `tfsdk:"retention_in_seconds"`
	DeadLetterQueueDeliveryCount types.Int64  `tfsdk:"dead_letter_queue_delivery_count"`
	ChannelConsumptionLimit      types.Int64  `tfsdk:"channel_consumption_limit"`
	DeduplicationWindowInSeconds types.Int64  `tfsdk:"deduplication_window_in_seconds"`
	IsSingleActiveConsumer       types.Bool   `tfsdk:"is_single_active_consumer"`
	ConsumerLeaseInSeconds       types.Int64  `tfsdk:"consumer_lease_in_seconds"`
	MaxSizeInBytes               types.Int64  `tfsdk:"max_size_in_bytes"`
	ConsumerGroupsEnabled        types.Bool   `tfsdk:"consumer_groups_enabled"`
	LargeMessagesEnabled         types.Bool   `tfsdk:"large_messages_enabled"`
	FreeformTags                 types.Map    `tfsdk:"freeform_tags"`
	MessagesEndpoint             types.String `tfsdk:"messages_endpoint"`
	State                        types.String `tfsdk:"state"`
	TimeCreated                  types.String `tfsdk:"time_created"`
	TimeUpdated                  types.String `tfsdk:"time_updated"`
}

type queueModel struct {
	queueFields
	Timeouts timeouts.Value `tfsdk:"timeouts"`
}

// queueSettings maps the integer settings' attributes to their API fields (CreateQueueDetails' properties).
var queueSettings = map[string]string{
	"visibility_in_seconds":            "visibilityInSeconds",
	"timeout_in_seconds":               "timeoutInSeconds",
	"retention_in_seconds":             "retentionInSeconds",
	"dead_letter_queue_delivery_count": "deadLetterQueueDeliveryCount",
	"channel_consumption_limit":        "channelConsumptionLimit",
	"deduplication_window_in_seconds":  "deduplicationWindowInSeconds",
	"consumer_lease_in_seconds":        "consumerLeaseInSeconds",
	"max_size_in_bytes":                "maxSizeInBytes",
}

var queueAttributes = map[string]bool{"compartment_id": true, "display_name": true, "is_single_active_consumer": true,
	"freeform_tags": true}

func init() {
	for attr := range queueSettings {
		queueAttributes[attr] = true
	}
}

// privateCapabilities keeps the queue's capabilities as read last: an update of the capabilities sends the whole
// list (a capability left out is turned off), and the primary consumer group's settings must go back unchanged.
const privateCapabilities = "capabilities"

// queueDeleteTimeout is how long a destroy waits for the deletion's work request when timeouts says nothing.
const queueDeleteTimeout = 20 * time.Minute

func (r *queueResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_queue"
}

func (r *queueResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	create := func(p string) apiField { return field("CreateQueueDetails", p) }
	attrs := map[string]schema.Attribute{
		"id": idAttribute("The OCID of the queue."),
		"compartment_id": schema.StringAttribute{Required: true, Validators: ocidValidators(),
			MarkdownDescription: create("compartmentId").describe("Changing it moves the queue (ChangeQueueCompartment)."),
		},
		"display_name": schema.StringAttribute{Required: true, MarkdownDescription: create("displayName").describe(),
			Validators: create("displayName").stringValidators()},
		"is_single_active_consumer": schema.BoolAttribute{Optional: true, Computed: true,
			MarkdownDescription: create("isSingleActiveConsumer").describe(),
			Default:             booldefault.StaticBool(create("isSingleActiveConsumer").boolDefault())},
		"consumer_groups_enabled": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Whether the queue has the `CONSUMER_GROUPS` capability (default false): consumer groups " +
				"(`ferry_consumer_group`) with filters and fanout, and a primary group whose OCID is the queue's."},
		"large_messages_enabled": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Whether the queue has the `LARGE_MESSAGES` capability (default false): messages of up " +
				"to 1 MiB instead of 256 KiB."},
		"freeform_tags": tagsAttribute(create("freeformTags")),
		"messages_endpoint": schema.StringAttribute{Computed: true, MarkdownDescription: field("Queue", "messagesEndpoint").describe(),
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		"state":        stateAttribute(),
		"time_created": timeCreatedAttribute(),
		"time_updated": schema.StringAttribute{Computed: true, MarkdownDescription: "When the queue was last changed (RFC 3339, UTC)."},
	}
	for attr, apiName := range queueSettings {
		f := create(apiName)
		a := schema.Int64Attribute{Optional: true, Computed: true, Validators: f.int64Validators(),
			Default: int64default.StaticInt64(f.int64Default()), MarkdownDescription: f.describe()}
		if attr == "retention_in_seconds" {
			a.PlanModifiers = []planmodifier.Int64{int64planmodifier.RequiresReplace()}
			a.MarkdownDescription = f.describe("Changing it creates a new queue.")
		}
		attrs[attr] = a
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A queue and its settings. Settings left out take the API's defaults; every setting but " +
			"`retention_in_seconds` is changed in place. Destroying a queue deletes its messages and waits for the " +
			"deletion's work request.",
		Attributes: attrs,
		Blocks:     map[string]schema.Block{"timeouts": timeouts.Block(ctx, timeouts.Opts{Delete: true})},
	}
}

func (r *queueResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configure(req.ProviderData, &resp.Diagnostics)
}

func (r *queueResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan queueModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	maxSize := plan.MaxSizeInBytes.ValueInt64()
	body := sdk.CreateQueueDetails{
		CompartmentId:                plan.CompartmentID.ValueString(),
		DisplayName:                  plan.DisplayName.ValueString(),
		VisibilityInSeconds:          intPtr(plan.VisibilityInSeconds),
		TimeoutInSeconds:             intPtr(plan.TimeoutInSeconds),
		RetentionInSeconds:           intPtr(plan.RetentionInSeconds),
		DeadLetterQueueDeliveryCount: intPtr(plan.DeadLetterQueueDeliveryCount),
		ChannelConsumptionLimit:      intPtr(plan.ChannelConsumptionLimit),
		DeduplicationWindowInSeconds: intPtr(plan.DeduplicationWindowInSeconds),
		IsSingleActiveConsumer:       plan.IsSingleActiveConsumer.ValueBoolPointer(),
		ConsumerLeaseInSeconds:       intPtr(plan.ConsumerLeaseInSeconds),
		MaxSizeInBytes:               &maxSize,
		FreeformTags:                 tagsOf(ctx, plan.FreeformTags, &resp.Diagnostics),
	}
	if caps := capabilitiesFor(nil, plan.ConsumerGroupsEnabled.ValueBool(), plan.LargeMessagesEnabled.ValueBool()); len(caps) > 0 {
		body.Capabilities = &caps
	}
	out, err := r.client.api.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: retryToken()}, body)
	if err := expect("CreateQueue", out, err, http.StatusAccepted); err != nil {
		addError(&resp.Diagnostics, "Cannot create the queue", err, queueAttributes)
		return
	}
	r.setState(ctx, *out.JSON202, etagOf(out), plan.Timeouts, resp.Private, &resp.State, &resp.Diagnostics)
}

func (r *queueResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state queueModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	out, err := r.client.api.GetQueueWithResponse(ctx, state.ID.ValueString(), &sdk.GetQueueParams{})
	err = expect("GetQueue", out, err, http.StatusOK)
	if isStatus(err, http.StatusNotFound) || err == nil && deleted(out.JSON200.LifecycleState) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, "Cannot read the queue", err, nil)
		return
	}
	r.setState(ctx, *out.JSON200, etagOf(out), state.Timeouts, resp.Private, &resp.State, &resp.Diagnostics)
}

func (r *queueResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state queueModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	etag := ifMatch(ctx, req.Private, &resp.Diagnostics)
	var caps []sdk.Capability
	resp.Diagnostics.Append(getPrivate(ctx, req.Private, privateCapabilities, &caps)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	var last *sdk.Queue
	if !plan.CompartmentID.Equal(state.CompartmentID) {
		out, err := r.client.api.ChangeQueueCompartmentWithResponse(ctx, id, &sdk.ChangeQueueCompartmentParams{IfMatch: etag},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: plan.CompartmentID.ValueString()})
		if err := expect("ChangeQueueCompartment", out, err, http.StatusAccepted); err != nil {
			addError(&resp.Diagnostics, "Cannot move the queue", err, queueAttributes)
			return
		}
		last, etag = out.JSON202, ptr(etagOf(out))
	}
	if body, changed := queueChanges(ctx, plan, state, caps, &resp.Diagnostics); changed {
		out, err := r.client.api.UpdateQueueWithResponse(ctx, id, &sdk.UpdateQueueParams{IfMatch: etag}, body)
		if err := expect("UpdateQueue", out, err, http.StatusAccepted); err != nil {
			addError(&resp.Diagnostics, "Cannot update the queue", err, queueAttributes)
			if last != nil { // the move was made: the state must say where the queue is now
				r.setState(ctx, *last, *etag, state.Timeouts, resp.Private, &resp.State, &resp.Diagnostics)
			}
			return
		}
		last, etag = out.JSON202, ptr(etagOf(out))
	}
	if last == nil { // only the timeouts changed: read what the state must hold
		out, err := r.client.api.GetQueueWithResponse(ctx, id, &sdk.GetQueueParams{})
		if err := expect("GetQueue", out, err, http.StatusOK); err != nil {
			addError(&resp.Diagnostics, "Cannot read the queue", err, nil)
			return
		}
		last, etag = out.JSON200, ptr(etagOf(out))
	}
	r.setState(ctx, *last, *etag, plan.Timeouts, resp.Private, &resp.State, &resp.Diagnostics)
}

func (r *queueResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state queueModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	etag := ifMatch(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, queueDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := r.client.api.DeleteQueueWithResponse(ctx, state.ID.ValueString(), &sdk.DeleteQueueParams{IfMatch: etag})
	if err := expect("DeleteQueue", out, err, http.StatusAccepted); err != nil {
		if !isStatus(err, http.StatusNotFound) {
			addError(&resp.Diagnostics, "Cannot delete the queue", err, nil)
		}
		return
	}
	if err := r.client.waitWorkRequest(ctx, workRequestID(out)); err != nil {
		resp.Diagnostics.AddError("The queue's deletion did not finish", err.Error())
	}
}

func (r *queueResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importByID(ctx, req, resp)
}

// setState writes the queue as the API answered it, keeping the configuration's timeouts, and keeps its etag
// and capabilities in private state for the next change.
func (r *queueResource) setState(ctx context.Context, q sdk.Queue, etag string, t timeouts.Value, private privateState,
	state interface {
		Set(context.Context, any) diag.Diagnostics
	}, diags *diag.Diagnostics) {
	caps := []sdk.Capability{}
	if q.Capabilities != nil {
		caps = *q.Capabilities
	}
	diags.Append(setPrivate(ctx, private, privateETag, etag)...)
	diags.Append(setPrivate(ctx, private, privateCapabilities, caps)...)
	diags.Append(state.Set(ctx, queueModel{queueFields: queueState(q), Timeouts: t})...)
}

func queueState(q sdk.Queue) queueFields {
	groups, large := hasCapability(q.Capabilities, sdk.CapabilityTypeCONSUMERGROUPS), hasCapability(q.Capabilities, sdk.CapabilityTypeLARGEMESSAGES)
	return queueFields{
		ID:                           types.StringValue(q.Id),
		CompartmentID:                types.StringValue(q.CompartmentId),
		DisplayName:                  types.StringValue(q.DisplayName),
		VisibilityInSeconds:          types.Int64Value(int64(q.VisibilityInSeconds)),
		TimeoutInSeconds:             types.Int64Value(int64(q.TimeoutInSeconds)),
		RetentionInSeconds:           types.Int64Value(int64(q.RetentionInSeconds)),
		DeadLetterQueueDeliveryCount: types.Int64Value(int64(q.DeadLetterQueueDeliveryCount)),
		ChannelConsumptionLimit:      types.Int64Value(int64(q.ChannelConsumptionLimit)),
		DeduplicationWindowInSeconds: types.Int64Value(int64(q.DeduplicationWindowInSeconds)),
		IsSingleActiveConsumer:       types.BoolValue(q.IsSingleActiveConsumer),
		ConsumerLeaseInSeconds:       types.Int64Value(int64(q.ConsumerLeaseInSeconds)),
		MaxSizeInBytes:               types.Int64Value(q.MaxSizeInBytes),
		ConsumerGroupsEnabled:        types.BoolValue(groups),
		LargeMessagesEnabled:         types.BoolValue(large),
		FreeformTags:                 tagsValue(q.FreeformTags),
		MessagesEndpoint:             types.StringValue(q.MessagesEndpoint),
		State:                        types.StringValue(string(q.LifecycleState)),
		TimeCreated:                  timeString(q.TimeCreated),
		TimeUpdated:                  timeString(q.TimeUpdated),
	}
}

// queueChanges is the UpdateQueue body of what the plan changes, and whether there is anything to send. Only the
// changes are sent: the capabilities list in particular replaces the queue's, so it goes only when it changes.
func queueChanges(ctx context.Context, plan, state queueModel, caps []sdk.Capability, diags *diag.Diagnostics) (sdk.UpdateQueueDetails, bool) {
	var body sdk.UpdateQueueDetails
	changed := false
	setInt := func(p, s types.Int64, dst **int) {
		if !p.Equal(s) {
			*dst, changed = intPtr(p), true
		}
	}
	setInt(plan.VisibilityInSeconds, state.VisibilityInSeconds, &body.VisibilityInSeconds)
	setInt(plan.TimeoutInSeconds, state.TimeoutInSeconds, &body.TimeoutInSeconds)
	setInt(plan.DeadLetterQueueDeliveryCount, state.DeadLetterQueueDeliveryCount, &body.DeadLetterQueueDeliveryCount)
	setInt(plan.ChannelConsumptionLimit, state.ChannelConsumptionLimit, &body.ChannelConsumptionLimit)
	setInt(plan.DeduplicationWindowInSeconds, state.DeduplicationWindowInSeconds, &body.DeduplicationWindowInSeconds)
	setInt(plan.ConsumerLeaseInSeconds, state.ConsumerLeaseInSeconds, &body.ConsumerLeaseInSeconds)
	if !plan.MaxSizeInBytes.Equal(state.MaxSizeInBytes) {
		body.MaxSizeInBytes, changed = plan.MaxSizeInBytes.ValueInt64Pointer(), true
	}
	if !plan.DisplayName.Equal(state.DisplayName) {
		body.DisplayName, changed = plan.DisplayName.ValueStringPointer(), true
	}
	if !plan.IsSingleActiveConsumer.Equal(state.IsSingleActiveConsumer) {
		body.IsSingleActiveConsumer, changed = plan.IsSingleActiveConsumer.ValueBoolPointer(), true
	}
	if !plan.FreeformTags.Equal(state.FreeformTags) {
		body.FreeformTags, changed = tagsOf(ctx, plan.FreeformTags, diags), true
	}
	if !plan.ConsumerGroupsEnabled.Equal(state.ConsumerGroupsEnabled) || !plan.LargeMessagesEnabled.Equal(state.LargeMessagesEnabled) {
		list := capabilitiesFor(caps, plan.ConsumerGroupsEnabled.ValueBool(), plan.LargeMessagesEnabled.ValueBool())
		body.Capabilities, changed = &list, true
	}
	return body, changed
}

// capabilitiesFor is the capabilities list that turns each capability on or off, keeping those of current that
// stay on as they are (the CONSUMER_GROUPS capability carries the primary group's settings).
func capabilitiesFor(current []sdk.Capability, groups, large bool) []sdk.Capability {
	out := []sdk.Capability{}
	for _, want := range []struct {
		on  bool
		typ sdk.CapabilityType
	}{{groups, sdk.CapabilityTypeCONSUMERGROUPS}, {large, sdk.CapabilityTypeLARGEMESSAGES}} {
		if !want.on {
			continue
		}
		i := slices.IndexFunc(current, func(c sdk.Capability) bool { return c.Type == want.typ })
		if i >= 0 {
			out = append(out, current[i])
		} else {
			out = append(out, sdk.Capability{Type: want.typ})
		}
	}
	return out
}

func hasCapability(caps *[]sdk.Capability, typ sdk.CapabilityType) bool {
	return caps != nil && slices.ContainsFunc(*caps, func(c sdk.Capability) bool { return c.Type == typ })
}

func ptr[T any](v T) *T { return &v }
