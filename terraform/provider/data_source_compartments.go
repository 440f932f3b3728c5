package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// compartmentsDataSource is the ferry_compartments data source: the children (or the whole subtree) of a
// compartment, optionally by name.
type compartmentsDataSource struct{ client *client }

func newCompartmentsDataSource() datasource.DataSource { return &compartmentsDataSource{} }

type compartmentsModel struct {
	CompartmentID          types.String         `tfsdk:"compartment_id"`
	Name                   types.String         `tfsdk:"name"`
	CompartmentIDInSubtree types.Bool           `tfsdk:"compartment_id_in_subtree"`
	Compartments           []compartmentSummary `tfsdk:"compartments"`
}

type compartmentSummary struct {
	ID            types.String `tfsdk:"id"`
	CompartmentID types.String `tfsdk:"compartment_id"`
	Name          types.String `tfsdk:"name"`
	Description   types.String `tfsdk:"description"`
	FreeformTags  types.Map    `tfsdk:"freeform_tags"`
	State         types.String `tfsdk:"state"`
	TimeCreated   types.String `tfsdk:"time_created"`
}

func (d *compartmentsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_compartments"
}

func (d *compartmentsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists the child compartments of a compartment (the tenancy's OCID names its root), or its " +
			"whole subtree.",
		Attributes: map[string]schema.Attribute{
			"compartment_id": schema.StringAttribute{Required: true, Validators: ocidValidators(),
				MarkdownDescription: "The OCID of the parent compartment."},
			"name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only the compartment with exactly this name (case-sensitive)."},
			"compartment_id_in_subtree": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "List every descendant the token may see, not only the children."},
			"compartments": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The compartments.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":             computedString("The OCID of the compartment."),
					"compartment_id": computedString("The OCID of its parent."),
					"name":           computedString("The name of the compartment."),
					"description":    computedString("Its description."),
					"freeform_tags":  computedTags(),
					"state":          computedString("The lifecycle state of the compartment."),
					"time_created":   computedString("When the compartment was created (RFC 3339, UTC)."),
				}}},
		},
	}
}

func (d *compartmentsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configure(req.ProviderData, &resp.Diagnostics)
}

func (d *compartmentsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var cfg compartmentsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	items, err := listAll("ListCompartments", func(page *string) (*sdk.ListCompartmentsResponse, error) {
		return d.client.api.ListCompartmentsWithResponse(ctx, &sdk.ListCompartmentsParams{
			CompartmentId: cfg.CompartmentID.ValueString(), Name: cfg.Name.ValueStringPointer(),
			CompartmentIdInSubtree: cfg.CompartmentIDInSubtree.ValueBoolPointer(), Page: page})
	}, func(r *sdk.ListCompartmentsResponse) []sdk.Compartment { return r.JSON200.Items })
	if err != nil {
		addError(&resp.Diagnostics, "Cannot list the compartments", err, map[string]bool{"compartment_id": true, "name": true})
		return
	}
	cfg.Compartments = make([]compartmentSummary, len(items))
	for i, c := range items {
		m := compartmentState(c)
		cfg.Compartments[i] = compartmentSummary{ID: m.ID, CompartmentID: m.CompartmentID, Name: m.Name,
			Description: m.Description, FreeformTags: m.FreeformTags, State: m.State, TimeCreated: m.TimeCreated}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}
