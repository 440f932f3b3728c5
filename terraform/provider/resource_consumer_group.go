package provider

import (
	"context"
	"net/http"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// consumerGroupResource is ferry_consumer_group: a filtered consumer group of a queue that has the
// CONSUMER_GROUPS capability. A new queue_id replaces it; everything else changes in place.
type consumerGroupResource struct{ client *client }

func newConsumerGroupResource() resource.Resource { return &consumerGroupResource{} }

type consumerGroupModel struct {
	ID                           types.String   `tfsdk:"id"`
	QueueID                      types.String   `tfsdk:"queue_id"`
	DisplayName                  types.String   `tfsdk:"display_name"`
	Filter                       types.String   `tfsdk:"filter"`
	IsEnabled                    types.Bool     `tfsdk:"is_enabled"`
	DeadLetterQueueDeliveryCount types.Int64    `tfsdk:"dead_letter_queue_delivery_count"`
	FreeformTags                 types.Map      `tfsdk:"freeform_tags"`
	State                        types.String   `tfsdk:"state"`
	TimeCreated                  types.String   `tfsdk:"time_created"`
	Timeouts                     timeouts.Value `tfsdk:"timeouts"`
}

var consumerGroupAttributes = map[string]bool{"queue_id": true, "display_name": true, "filter": true, "is_enabled": true,
	"dead_letter_queue_delivery_count": true, "freeform_tags": true}

// consumerGroupDeleteTimeout is how long a destroy waits for the deletion's work request by default (ferry
// deletes a group before it answers, so this is a bound, not an expectation).
const consumerGroupDeleteTimeout = 5 * time.Minute

// inheritDLQCount is what UpdateConsumerGroupDetails.deadLetterQueueDeliveryCount takes to make a group inherit
// its queue's dead-letter count again (the API's encoding of "remove the group's own").
const inheritDLQCount = -1

func (r *consumerGroupResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_consumer_group"
}

func (r *consumerGroupResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	create := func(p string) apiField { return field("CreateConsumerGroupDetails", p) }
	resp.Schema = schema.Schema{
		MarkdownDescription: "A consumer group of a queue with `consumer_groups_enabled`: every message published " +
			"afterwards whose attributes match `filter` is delivered to the group too, with its own leases, delivery " +
			"counts and dead-letter queue. (The queue's primary group is managed through the queue.)",
		Attributes: map[string]schema.Attribute{
			"id":       idAttribute("The OCID of the consumer group."),
			"queue_id": parentAttribute(create("queueId"), "Changing it creates a new group on the other queue."),
			"display_name": schema.StringAttribute{Required: true, MarkdownDescription: create("displayName").describe(),
				Validators: create("displayName").stringValidators()},
			"filter": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(""),
				MarkdownDescription: create("filter").describe("A changed filter applies to messages published afterwards."),
				Validators:          create("filter").stringValidators()},
			"is_enabled": schema.BoolAttribute{Optional: true, Computed: true,
				Default:             booldefault.StaticBool(create("isEnabled").boolDefault()),
				MarkdownDescription: create("isEnabled").describe()},
			"dead_letter_queue_delivery_count": schema.Int64Attribute{Optional: true,
				MarkdownDescription: create("deadLetterQueueDeliveryCount").describe("Leaving it out (or removing it) makes the group inherit the queue's."),
				Validators:          create("deadLetterQueueDeliveryCount").int64Validators()},
			"freeform_tags": tagsAttribute(create("freeformTags")),
			"state":         stateAttribute(),
			"time_created":  timeCreatedAttribute(),
		},
		Blocks: map[string]schema.Block{"timeouts": timeouts.Block(ctx, timeouts.Opts{Delete: true})},
	}
}

func (r *consumerGroupResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configure(req.ProviderData, &resp.Diagnostics)
}

func (r *consumerGroupResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan consumerGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	body := sdk.CreateConsumerGroupDetails{
		QueueId:                      plan.QueueID.ValueString(),
		DisplayName:                  plan.DisplayName.ValueString(),
		Filter:                       plan.Filter.ValueStringPointer(),
		IsEnabled:                    plan.IsEnabled.ValueBoolPointer(),
		DeadLetterQueueDeliveryCount: intPtr(plan.DeadLetterQueueDeliveryCount),
		FreeformTags:                 tagsOf(ctx, plan.FreeformTags, &resp.Diagnostics),
	}
	out, err := r.client.api.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{OpcRetryToken: retryToken()}, body)
	if err := expect("CreateConsumerGroup", out, err, http.StatusAccepted); err != nil {
		addError(&resp.Diagnostics, "Cannot create the consumer group", err, consumerGroupAttributes)
		return
	}
	resp.Diagnostics.Append(setPrivate(ctx, resp.Private, privateETag, etagOf(out))...)
	resp.Diagnostics.Append(resp.State.Set(ctx, consumerGroupState(*out.JSON202, plan.Timeouts))...)
}

func (r *consumerGroupResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state consumerGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	out, err := r.client.api.GetConsumerGroupWithResponse(ctx, state.ID.ValueString(), &sdk.GetConsumerGroupParams{})
	err = expect("GetConsumerGroup", out, err, http.StatusOK)
	if isStatus(err, http.StatusNotFound) || err == nil && deleted(out.JSON200.LifecycleState) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, "Cannot read the consumer group", err, nil)
		return
	}
	resp.Diagnostics.Append(setPrivate(ctx, resp.Private, privateETag, etagOf(out))...)
	resp.Diagnostics.Append(resp.State.Set(ctx, consumerGroupState(*out.JSON200, state.Timeouts))...)
}

func (r *consumerGroupResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state consumerGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	etag := ifMatch(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	body := sdk.UpdateConsumerGroupDetails{
		DisplayName:  plan.DisplayName.ValueStringPointer(),
		Filter:       plan.Filter.ValueStringPointer(),
		IsEnabled:    plan.IsEnabled.ValueBoolPointer(),
		FreeformTags: tagsOf(ctx, plan.FreeformTags, &resp.Diagnostics),
	}
	if !plan.DeadLetterQueueDeliveryCount.Equal(state.DeadLetterQueueDeliveryCount) {
		body.DeadLetterQueueDeliveryCount = intPtr(plan.DeadLetterQueueDeliveryCount)
		if body.DeadLetterQueueDeliveryCount == nil {
			body.DeadLetterQueueDeliveryCount = ptr(inheritDLQCount)
		}
	}
	out, err := r.client.api.UpdateConsumerGroupWithResponse(ctx, state.ID.ValueString(), &sdk.UpdateConsumerGroupParams{IfMatch: etag}, body)
	if err := expect("UpdateConsumerGroup", out, err, http.StatusAccepted); err != nil {
		addError(&resp.Diagnostics, "Cannot update the consumer group", err, consumerGroupAttributes)
		return
	}
	resp.Diagnostics.Append(setPrivate(ctx, resp.Private, privateETag, etagOf(out))...)
	resp.Diagnostics.Append(resp.State.Set(ctx, consumerGroupState(*out.JSON202, plan.Timeouts))...)
}

func (r *consumerGroupResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state consumerGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	etag := ifMatch(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, consumerGroupDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := r.client.api.DeleteConsumerGroupWithResponse(ctx, state.ID.ValueString(), &sdk.DeleteConsumerGroupParams{IfMatch: etag})
	if err := expect("DeleteConsumerGroup", out, err, http.StatusAccepted); err != nil {
		if !isStatus(err, http.StatusNotFound) {
			addError(&resp.Diagnostics, "Cannot delete the consumer group", err, nil)
		}
		return
	}
	if err := r.client.waitWorkRequest(ctx, workRequestID(out)); err != nil {
		resp.Diagnostics.AddError("The consumer group's deletion did not finish", err.Error())
	}
}

func (r *consumerGroupResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importByID(ctx, req, resp)
}

func consumerGroupState(g sdk.ConsumerGroup, t timeouts.Value) consumerGroupModel {
	return consumerGroupModel{
		ID:                           types.StringValue(g.Id),
		QueueID:                      types.StringValue(g.QueueId),
		DisplayName:                  types.StringValue(g.DisplayName),
		Filter:                       types.StringValue(g.Filter),
		IsEnabled:                    types.BoolValue(g.IsEnabled),
		DeadLetterQueueDeliveryCount: optionalInt64(g.DeadLetterQueueDeliveryCount),
		FreeformTags:                 tagsValue(g.FreeformTags),
		State:                        types.StringValue(string(g.LifecycleState)),
		TimeCreated:                  timeString(g.TimeCreated),
		Timeouts:                     t,
	}
}
