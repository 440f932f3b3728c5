package provider

import (
	"context"
	"net/http"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// policyResource is ferry_policy: an IAM policy (OCI statement syntax) attached to a compartment. No API moves a
// policy, so a new compartment_id replaces it.
type policyResource struct{ client *client }

func newPolicyResource() resource.Resource { return &policyResource{} }

type policyModel struct {
	ID            types.String `tfsdk:"id"`
	CompartmentID types.String `tfsdk:"compartment_id"`
	Name          types.String `tfsdk:"name"`
	Description   types.String `tfsdk:"description"`
	Statements    types.List   `tfsdk:"statements"`
	FreeformTags  types.Map    `tfsdk:"freeform_tags"`
	State         types.String `tfsdk:"state"`
	TimeCreated   types.String `tfsdk:"time_created"`
}

var policyAttributes = map[string]bool{"compartment_id": true, "name": true, "description": true, "statements": true,
	"freeform_tags": true}

func (r *policyResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_policy"
}

func (r *policyResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	create := func(p string) apiField { return field("CreatePolicyDetails", p) }
	resp.Schema = schema.Schema{
		MarkdownDescription: "An IAM policy: statements such as `Allow group Producers to use queue-push in compartment " +
			"orders`, which apply in the subtree of the compartment the policy is attached to. A statement with a " +
			"syntax error is refused at apply time, naming the statement and the column.",
		Attributes: map[string]schema.Attribute{
			"id":             idAttribute("The OCID of the policy."),
			"compartment_id": parentAttribute(create("compartmentId"), "Changing it creates a new policy (ferry does not move policies)."),
			"name": schema.StringAttribute{Required: true, MarkdownDescription: create("name").describe(),
				Validators: create("name").stringValidators()},
			"description": descriptionAttribute(create("description")),
			"statements": schema.ListAttribute{Required: true, ElementType: types.StringType,
				MarkdownDescription: create("statements").describe(), Validators: create("statements").listValidators()},
			"freeform_tags": tagsAttribute(create("freeformTags")),
			"state":         stateAttribute(),
			"time_created":  timeCreatedAttribute(),
		},
	}
}

func (r *policyResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configure(req.ProviderData, &resp.Diagnostics)
}

func (r *policyResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan policyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var statements []string
	resp.Diagnostics.Append(plan.Statements.ElementsAs(ctx, &statements, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	body := sdk.CreatePolicyDetails{
		CompartmentId: plan.CompartmentID.ValueString(),
		Name:          plan.Name.ValueString(),
		Description:   plan.Description.ValueStringPointer(),
		Statements:    statements,
		FreeformTags:  tagsOf(ctx, plan.FreeformTags, &resp.Diagnostics),
	}
	out, err := r.client.api.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{OpcRetryToken: retryToken()}, body)
	if err := expect("CreatePolicy", out, err, http.StatusOK); err != nil {
		addError(&resp.Diagnostics, "Cannot create the policy", err, policyAttributes)
		return
	}
	resp.Diagnostics.Append(setPrivate(ctx, resp.Private, privateETag, etagOf(out))...)
	resp.Diagnostics.Append(resp.State.Set(ctx, policyState(*out.JSON200))...)
}

func (r *policyResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state policyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	out, err := r.client.api.GetPolicyWithResponse(ctx, state.ID.ValueString(), &sdk.GetPolicyParams{})
	err = expect("GetPolicy", out, err, http.StatusOK)
	if isStatus(err, http.StatusNotFound) || err == nil && deleted(out.JSON200.LifecycleState) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, "Cannot read the policy", err, nil)
		return
	}
	resp.Diagnostics.Append(setPrivate(ctx, resp.Private, privateETag, etagOf(out))...)
	resp.Diagnostics.Append(resp.State.Set(ctx, policyState(*out.JSON200))...)
}

func (r *policyResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan policyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	etag := ifMatch(ctx, req.Private, &resp.Diagnostics)
	var statements []string
	resp.Diagnostics.Append(plan.Statements.ElementsAs(ctx, &statements, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	body := sdk.UpdatePolicyDetails{
		Name:         plan.Name.ValueStringPointer(),
		Description:  plan.Description.ValueStringPointer(),
		Statements:   &statements,
		FreeformTags: tagsOf(ctx, plan.FreeformTags, &resp.Diagnostics),
	}
	out, err := r.client.api.UpdatePolicyWithResponse(ctx, plan.ID.ValueString(), &sdk.UpdatePolicyParams{IfMatch: etag}, body)
	if err := expect("UpdatePolicy", out, err, http.StatusOK); err != nil {
		addError(&resp.Diagnostics, "Cannot update the policy", err, policyAttributes)
		return
	}
	resp.Diagnostics.Append(setPrivate(ctx, resp.Private, privateETag, etagOf(out))...)
	resp.Diagnostics.Append(resp.State.Set(ctx, policyState(*out.JSON200))...)
}

func (r *policyResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state policyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	etag := ifMatch(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	out, err := r.client.api.DeletePolicyWithResponse(ctx, state.ID.ValueString(), &sdk.DeletePolicyParams{IfMatch: etag})
	if err := expect("DeletePolicy", out, err, http.StatusNoContent); err != nil && !isStatus(err, http.StatusNotFound) {
		addError(&resp.Diagnostics, "Cannot delete the policy", err, nil)
	}
}

func (r *policyResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importByID(ctx, req, resp)
}

func policyState(p sdk.Policy) policyModel {
	return policyModel{
		ID:            types.StringValue(p.Id),
		CompartmentID: types.StringValue(p.CompartmentId),
		Name:          types.StringValue(p.Name),
		Description:   types.StringValue(p.Description),
		Statements:    stringsValue(p.Statements),
		FreeformTags:  tagsValue(p.FreeformTags),
		State:         types.StringValue(string(p.LifecycleState)),
		TimeCreated:   timeString(p.TimeCreated),
	}
}
