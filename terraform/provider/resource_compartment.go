package provider

import (
	"context"
	"net/http"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// compartmentResource is ferry_compartment: a compartment under a parent (no API moves one, so a new parent
// replaces it).
type compartmentResource struct{ client *client }

func newCompartmentResource() resource.Resource { return &compartmentResource{} }

type compartmentModel struct {
	ID            types.String `tfsdk:"id"`
	CompartmentID types.String `tfsdk:"compartment_id"`
	Name          types.String `tfsdk:"name"`
	Description   types.String `tfsdk:"description"`
	FreeformTags  types.Map    `tfsdk:"freeform_tags"`
	State         types.String `tfsdk:"state"`
	TimeCreated   types.String `tfsdk:"time_created"`
}

var compartmentAttributes = map[string]bool{"compartment_id": true, "name": true, "description": true, "freeform_tags": true}

func (r *compartmentResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_compartment"
}

func (r *compartmentResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	create := func(p string) apiField { return field("CreateCompartmentDetails", p) }
	resp.Schema = schema.Schema{
		MarkdownDescription: "A compartment: a node of the tenancy's compartment tree, and the unit of access control. " +
			"A compartment that still holds compartments, queues or policies cannot be deleted.",
		Attributes: map[string]schema.Attribute{
			"id":             idAttribute("The OCID of the compartment."),
			"compartment_id": parentAttribute(create("compartmentId"), "Changing it creates a new compartment (ferry does not move compartments)."),
			"name":           schema.StringAttribute{Required: true, MarkdownDescription: create("name").describe(), Validators: create("name").stringValidators()},
			"description":    descriptionAttribute(create("description")),
			"freeform_tags":  tagsAttribute(create("freeformTags")),
			"state":          stateAttribute(),
			"time_created":   timeCreatedAttribute(),
		},
	}
}

func (r *compartmentResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configure(req.ProviderData, &resp.Diagnostics)
}

func (r *compartmentResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan compartmentModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	body := sdk.CreateCompartmentDetails{
		CompartmentId: plan.CompartmentID.ValueString(),
		Name:          plan.Name.ValueString(),
		Description:   plan.Description.ValueStringPointer(),
		FreeformTags:  tagsOf(ctx, plan.FreeformTags, &resp.Diagnostics),
	}
	out, err := r.client.api.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{OpcRetryToken: retryToken()}, body)
	if err := expect("CreateCompartment", out, err, http.StatusOK); err != nil {
		addError(&resp.Diagnostics, "Cannot create the compartment", err, compartmentAttributes)
		return
	}
	resp.Diagnostics.Append(setPrivate(ctx, resp.Private, privateETag, etagOf(out))...)
	resp.Diagnostics.Append(resp.State.Set(ctx, compartmentState(*out.JSON200))...)
}

func (r *compartmentResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state compartmentModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	out, err := r.client.api.GetCompartmentWithResponse(ctx, state.ID.ValueString(), &sdk.GetCompartmentParams{})
	err = expect("GetCompartment", out, err, http.StatusOK)
	if isStatus(err, http.StatusNotFound) || err == nil && deleted(out.JSON200.LifecycleState) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, "Cannot read the compartment", err, nil)
		return
	}
	resp.Diagnostics.Append(setPrivate(ctx, resp.Private, privateETag, etagOf(out))...)
	resp.Diagnostics.Append(resp.State.Set(ctx, compartmentState(*out.JSON200))...)
}

func (r *compartmentResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan compartmentModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	etag := ifMatch(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	body := sdk.UpdateCompartmentDetails{
		Name:         plan.Name.ValueStringPointer(),
		Description:  plan.Description.ValueStringPointer(),
		FreeformTags: tagsOf(ctx, plan.FreeformTags, &resp.Diagnostics),
	}
	out, err := r.client.api.UpdateCompartmentWithResponse(ctx, plan.ID.ValueString(), &sdk.UpdateCompartmentParams{IfMatch: etag}, body)
	if err := expect("UpdateCompartment", out, err, http.StatusOK); err != nil {
		addError(&resp.Diagnostics, "Cannot update the compartment", err, compartmentAttributes)
		return
	}
	resp.Diagnostics.Append(setPrivate(ctx, resp.Private, privateETag, etagOf(out))...)
	resp.Diagnostics.Append(resp.State.Set(ctx, compartmentState(*out.JSON200))...)
}

func (r *compartmentResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state compartmentModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	etag := ifMatch(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	out, err := r.client.api.DeleteCompartmentWithResponse(ctx, state.ID.ValueString(), &sdk.DeleteCompartmentParams{IfMatch: etag})
	if err := expect("DeleteCompartment", out, err, http.StatusNoContent); err != nil && !isStatus(err, http.StatusNotFound) {
		addError(&resp.Diagnostics, "Cannot delete the compartment", err, nil)
	}
}

func (r *compartmentResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importByID(ctx, req, resp)
}

func compartmentState(c sdk.Compartment) compartmentModel {
	return compartmentModel{
		ID:            types.StringValue(c.Id),
		CompartmentID: types.StringPointerValue(c.CompartmentId),
		Name:          types.StringValue(c.Name),
		Description:   types.StringValue(c.Description),
		FreeformTags:  tagsValue(c.FreeformTags),
		State:         types.StringValue(string(c.LifecycleState)),
		TimeCreated:   timeString(c.TimeCreated),
	}
}

// The attributes every resource shares.

func idAttribute(description string) schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: description,
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
}

// parentAttribute is a required OCID that cannot change in place (notes say what a change does).
func parentAttribute(f apiField, notes ...string) schema.StringAttribute {
	return schema.StringAttribute{Required: true, MarkdownDescription: f.describe(notes...), Validators: ocidValidators(),
		PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}}
}

// descriptionAttribute is an optional description the server stores as "" when absent: "" is its default, so
// that removing it from the configuration clears it.
func descriptionAttribute(f apiField) schema.StringAttribute {
	return schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(""),
		MarkdownDescription: f.describe(), Validators: f.stringValidators()}
}

// tagsAttribute is freeform_tags: the empty map by default, so that tags removed from the configuration are
// removed from the resource and tags added outside Terraform show up as a diff.
func tagsAttribute(f apiField) schema.MapAttribute {
	return schema.MapAttribute{Optional: true, Computed: true, ElementType: types.StringType,
		Default:             mapdefault.StaticValue(tagsValue(nil)),
		MarkdownDescription: f.describe(), Validators: f.mapValidators()}
}

func stateAttribute() schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: "The lifecycle state (`ACTIVE` once created).",
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
}

func timeCreatedAttribute() schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: "When it was created (RFC 3339, UTC).",
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
}
