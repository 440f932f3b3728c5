package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// policiesDataSource is the ferry_policies data source: the policies attached to a compartment, optionally by
// name.
type policiesDataSource struct{ client *client }

func newPoliciesDataSource() datasource.DataSource { return &policiesDataSource{} }

type policiesModel struct {
	CompartmentID types.String    `tfsdk:"compartment_id"`
	Name          types.String    `tfsdk:"name"`
	Policies      []policySummary `tfsdk:"policies"`
}

type policySummary struct {
	ID            types.String `tfsdk:"id"`
	CompartmentID types.String `tfsdk:"compartment_id"`
	Name          types.String `tfsdk:"name"`
	Description   types.String `tfsdk:"description"`
	Statements    types.List   `tfsdk:"statements"`
	FreeformTags  types.Map    `tfsdk:"freeform_tags"`
	State         types.String `tfsdk:"state"`
	TimeCreated   types.String `tfsdk:"time_created"`
}

func (d *policiesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_policies"
}

func (d *policiesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	p := func(name string) string { return field("Policy", name).describe() }
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists the policies attached to a compartment (a tenancy starts with `Tenant Admin Policy` in " +
			"its root compartment).",
		Attributes: map[string]schema.Attribute{
			"compartment_id": schema.StringAttribute{Required: true, Validators: ocidValidators(),
				MarkdownDescription: "The OCID of the compartment whose policies to list."},
			"name": schema.StringAttribute{Optional: true, MarkdownDescription: "Only the policy with exactly this name."},
			"policies": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The policies.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":             computedString(p("id")),
					"compartment_id": computedString(p("compartmentId")),
					"name":           computedString(p("name")),
					"description":    computedString(p("description")),
					"statements":     schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: p("statements")},
					"freeform_tags":  computedTags(),
					"state":          computedString("The lifecycle state of the policy."),
					"time_created":   computedString(p("timeCreated")),
				}}},
		},
	}
}

func (d *policiesDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configure(req.ProviderData, &resp.Diagnostics)
}

func (d *policiesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var cfg policiesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	items, err := listAll("ListPolicies", func(page *string) (*sdk.ListPoliciesResponse, error) {
		return d.client.api.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{
			CompartmentId: cfg.CompartmentID.ValueString(), Name: cfg.Name.ValueStringPointer(), Page: page})
	}, func(r *sdk.ListPoliciesResponse) []sdk.Policy { return r.JSON200.Items })
	if err != nil {
		addError(&resp.Diagnostics, "Cannot list the policies", err, map[string]bool{"compartment_id": true, "name": true})
		return
	}
	cfg.Policies = make([]policySummary, len(items))
	for i, pol := range items {
		m := policyState(pol)
		cfg.Policies[i] = policySummary{ID: m.ID, CompartmentID: m.CompartmentID, Name: m.Name, Description: m.Description,
			Statements: m.Statements, FreeformTags: m.FreeformTags, State: m.State, TimeCreated: m.TimeCreated}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}
