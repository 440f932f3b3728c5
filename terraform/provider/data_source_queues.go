package provider

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// queuesDataSource is the ferry_queues data source: the queues of a compartment, optionally by display name.
type queuesDataSource struct{ client *client }

func newQueuesDataSource() datasource.DataSource { return &queuesDataSource{} }

type queuesModel struct {
	CompartmentID types.String   `tfsdk:"compartment_id"`
	DisplayName   types.String   `tfsdk:"display_name"`
	Queues        []queueSummary `tfsdk:"queues"`
}

type queueSummary struct {
	ID                    types.String `tfsdk:"id"`
	CompartmentID         types.String `tfsdk:"compartment_id"`
	DisplayName           types.String `tfsdk:"display_name"`
	ConsumerGroupsEnabled types.Bool   `tfsdk:"consumer_groups_enabled"`
	LargeMessagesEnabled  types.Bool   `tfsdk:"large_messages_enabled"`
	FreeformTags          types.Map    `tfsdk:"freeform_tags"`
	MessagesEndpoint      types.String `tfsdk:"messages_endpoint"`
	State                 types.String `tfsdk:"state"`
	TimeCreated           types.String `tfsdk:"time_created"`
	TimeUpdated           types.String `tfsdk:"time_updated"`
}

func (d *queuesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_queues"
}

func (d *queuesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists the queues of a compartment (newest first), without their settings: read one with the " +
			"`ferry_queue` data source for those.",
		Attributes: map[string]schema.Attribute{
			"compartment_id": schema.StringAttribute{Required: true, Validators: ocidValidators(),
				MarkdownDescription: "The OCID of the compartment whose queues to list."},
			"display_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only the queues with exactly this display name (case-sensitive)."},
			"queues": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The queues.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":                      computedString("The OCID of the queue."),
					"compartment_id":          computedString("The OCID of the queue's compartment."),
					"display_name":            computedString("The display name of the queue."),
					"consumer_groups_enabled": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the queue has the `CONSUMER_GROUPS` capability."},
					"large_messages_enabled":  schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the queue has the `LARGE_MESSAGES` capability."},
					"freeform_tags":           computedTags(),
					"messages_endpoint":       computedString(field("QueueSummary", "messagesEndpoint").describe()),
					"state":                   computedString("The lifecycle state of the queue."),
					"time_created":            computedString("When the queue was created (RFC 3339, UTC)."),
					"time_updated":            computedString("When the queue was last changed (RFC 3339, UTC)."),
				}}},
		},
	}
}

func (d *queuesDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configure(req.ProviderData, &resp.Diagnostics)
}

func (d *queuesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var cfg queuesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	compartment := cfg.CompartmentID.ValueString()
	items, err := listAll("ListQueues", func(page *string) (*sdk.ListQueuesResponse, error) {
		return d.client.api.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: &compartment,
			DisplayName: cfg.DisplayName.ValueStringPointer(), Page: page})
	}, func(r *sdk.ListQueuesResponse) []sdk.QueueSummary { return r.JSON200.Items })
	if err != nil {
		addError(&resp.Diagnostics, "Cannot list the queues", err, map[string]bool{"compartment_id": true, "display_name": true})
		return
	}
	cfg.Queues = make([]queueSummary, len(items))
	for i, q := range items {
		var caps []sdk.QueueSummaryCapabilities
		if q.Capabilities != nil {
			caps = *q.Capabilities
		}
		cfg.Queues[i] = queueSummary{
			ID:                    types.StringValue(q.Id),
			CompartmentID:         types.StringValue(q.CompartmentId),
			DisplayName:           types.StringValue(q.DisplayName),
			ConsumerGroupsEnabled: types.BoolValue(slices.Contains(caps, sdk.QueueSummaryCapabilitiesCONSUMERGROUPS)),
			LargeMessagesEnabled:  types.BoolValue(slices.Contains(caps, sdk.QueueSummaryCapabilitiesLARGEMESSAGES)),
			FreeformTags:          tagsValue(q.FreeformTags),
			MessagesEndpoint:      types.StringValue(q.MessagesEndpoint),
			State:                 types.StringValue(string(q.LifecycleState)),
			TimeCreated:           timeString(q.TimeCreated),
			TimeUpdated:           timeString(q.TimeUpdated),
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}
