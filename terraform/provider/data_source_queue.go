package provider

import (
	"context"
	"net/http"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// queueDataSource is the ferry_queue data source: one queue by OCID, with every setting.
type queueDataSource struct{ client *client }

func newQueueDataSource() datasource.DataSource { return &queueDataSource{} }

func (d *queueDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_queue"
}

func (d *queueDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	q := func(p string) string { return field("Queue", p).describe() }
	attrs := map[string]schema.Attribute{
		"id":                        schema.StringAttribute{Required: true, MarkdownDescription: "The OCID of the queue.", Validators: ocidValidators()},
		"compartment_id":            computedString(q("compartmentId")),
		"display_name":              computedString(q("displayName")),
		"is_single_active_consumer": schema.BoolAttribute{Computed: true, MarkdownDescription: q("isSingleActiveConsumer")},
		"consumer_groups_enabled":   schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the queue has the `CONSUMER_GROUPS` capability."},
		"large_messages_enabled":    schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the queue has the `LARGE_MESSAGES` capability."},
		"freeform_tags":             computedTags(),
		"messages_endpoint":         computedString(q("messagesEndpoint")),
		"state":                     computedString("The lifecycle state of the queue."),
		"time_created":              computedString("When the queue was created (RFC 3339, UTC)."),
		"time_updated":              computedString("When the queue was last changed (RFC 3339, UTC)."),
	}
	for attr, apiName := range queueSettings {
		attrs[attr] = schema.Int64Attribute{Computed: true, MarkdownDescription: q(apiName)}
	}
	resp.Schema = schema.Schema{MarkdownDescription: "Reads a queue and its settings by OCID.", Attributes: attrs}
}

func (d *queueDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configure(req.ProviderData, &resp.Diagnostics)
}

func (d *queueDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var cfg queueFields
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	out, err := d.client.api.GetQueueWithResponse(ctx, cfg.ID.ValueString(), &sdk.GetQueueParams{})
	if err := expect("GetQueue", out, err, http.StatusOK); err != nil {
		addError(&resp.Diagnostics, "Cannot read the queue", err, map[string]bool{"id": true})
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, queueState(*out.JSON200))...)
}

func computedString(description string) schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: description}
}

func computedTags() schema.MapAttribute {
	return schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Free-form tags."}
}

// listAll reads every page of a list operation: fetch asks for one page (nil: the first), items takes its
// entries; pages follow the opc-next-page header until an answer has none.
func listAll[R response, T any](op string, fetch func(page *string) (R, error), items func(R) []T) ([]T, error) {
	all := []T{}
	var page *string
	for {
		r, err := fetch(page)
		if err := expect(op, r, err, http.StatusOK); err != nil {
			return nil, err
		}
		all = append(all, items(r)...)
		next := httpResponse(r).Header.Get("opc-next-page")
		if next == "" {
			return all, nil
		}
		page = &next
	}
}
