package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// consumerGroupsDataSource is the ferry_consumer_groups data source: a queue's consumer groups, the primary
// group included.
type consumerGroupsDataSource struct{ client *client }

func newConsumerGroupsDataSource() datasource.DataSource { return &consumerGroupsDataSource{} }

type consumerGroupsModel struct {
	QueueID        types.String           `tfsdk:"queue_id"`
	DisplayName    types.String           `tfsdk:"display_name"`
	ConsumerGroups []consumerGroupSummary `tfsdk:"consumer_groups"`
}

type consumerGroupSummary struct {
	ID                           types.String `tfsdk:"id"`
	QueueID                      types.String `tfsdk:"queue_id"`
	CompartmentID                types.String `tfsdk:"compartment_id"`
	DisplayName                  types.String `tfsdk:"display_name"`
	Filter                       types.String `tfsdk:"filter"`
	IsEnabled                    types.Bool   `tfsdk:"is_enabled"`
	IsPrimary                    types.Bool   `tfsdk:"is_primary"`
	DeadLetterQueueDeliveryCount types.Int64  `tfsdk:"dead_letter_queue_delivery_count"`
	FreeformTags                 types.Map    `tfsdk:"freeform_tags"`
	State                        types.String `tfsdk:"state"`
	TimeCreated                  types.String `tfsdk:"time_created"`
}

func (d *consumerGroupsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_consumer_groups"
}

func (d *consumerGroupsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	g := func(p string) string { return field("ConsumerGroup", p).describe() }
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists the consumer groups of a queue, its primary group included.",
		Attributes: map[string]schema.Attribute{
			"queue_id": schema.StringAttribute{Required: true, Validators: ocidValidators(),
				MarkdownDescription: "The OCID of the queue whose groups to list."},
			"display_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only the group with exactly this display name."},
			"consumer_groups": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The consumer groups.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":                               computedString(g("id")),
					"queue_id":                         computedString(g("queueId")),
					"compartment_id":                   computedString(g("compartmentId")),
					"display_name":                     computedString(g("displayName")),
					"filter":                           computedString(g("filter")),
					"is_enabled":                       schema.BoolAttribute{Computed: true, MarkdownDescription: g("isEnabled")},
					"is_primary":                       schema.BoolAttribute{Computed: true, MarkdownDescription: g("isPrimary")},
					"dead_letter_queue_delivery_count": schema.Int64Attribute{Computed: true, MarkdownDescription: g("deadLetterQueueDeliveryCount")},
					"freeform_tags":                    computedTags(),
					"state":                            computedString("The lifecycle state of the group."),
					"time_created":                     computedString(g("timeCreated")),
				}}},
		},
	}
}

func (d *consumerGroupsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configure(req.ProviderData, &resp.Diagnostics)
}

func (d *consumerGroupsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var cfg consumerGroupsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	items, err := listAll("ListConsumerGroups", func(page *string) (*sdk.ListConsumerGroupsResponse, error) {
		return d.client.api.ListConsumerGroupsWithResponse(ctx, &sdk.ListConsumerGroupsParams{
			QueueId: cfg.QueueID.ValueString(), DisplayName: cfg.DisplayName.ValueStringPointer(), Page: page})
	}, func(r *sdk.ListConsumerGroupsResponse) []sdk.ConsumerGroup { return r.JSON200.Items })
	if err != nil {
		addError(&resp.Diagnostics, "Cannot list the consumer groups", err, map[string]bool{"queue_id": true, "display_name": true})
		return
	}
	cfg.ConsumerGroups = make([]consumerGroupSummary, len(items))
	for i, g := range items {
		cfg.ConsumerGroups[i] = consumerGroupSummary{
			ID:                           types.StringValue(g.Id),
			QueueID:                      types.StringValue(g.QueueId),
			CompartmentID:                types.StringValue(g.CompartmentId),
			DisplayName:                  types.StringValue(g.DisplayName),
			Filter:                       types.StringValue(g.Filter),
			IsEnabled:                    types.BoolValue(g.IsEnabled),
			IsPrimary:                    types.BoolValue(g.IsPrimary),
			DeadLetterQueueDeliveryCount: optionalInt64(g.DeadLetterQueueDeliveryCount),
			FreeformTags:                 tagsValue(g.FreeformTags),
			State:                        types.StringValue(string(g.LifecycleState)),
			TimeCreated:                  timeString(g.TimeCreated),
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}
