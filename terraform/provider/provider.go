// Package provider is ferry's Terraform provider (source address ferry-mq/ferry): the resources
// ferry_compartment, ferry_queue, ferry_consumer_group and ferry_policy, and data sources to read them, over the
// generated Go SDK (openapi/sdk). Attribute names are the API's fields in snake_case; ranges, patterns, defaults
// and descriptions come from openapi.yaml (spec.go).
package provider

import (
	"context"
	"net/url"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Address is the provider's source address, as configurations name it in required_providers.
const Address = "registry.terraform.io/ferry-mq/ferry"

// Environment variables the provider's arguments default to.
const (
	EnvEndpoint = "FERRY_ENDPOINT"
	EnvToken    = "FERRY_TOKEN"
)

// ferryProvider is the provider; version is the binary's, sent in the User-Agent.
type ferryProvider struct {
	version string
}

// New returns the provider factory for version (what providerserver.Serve and the acceptance tests take).
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &ferryProvider{version: version} }
}

type providerModel struct {
	Endpoint types.String `tfsdk:"endpoint"`
	Token    types.String `tfsdk:"token"`
}

func (p *ferryProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "ferry"
	resp.Version = p.version
}

func (p *ferryProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Manages [ferry](https://github.com/ferry-mq/ferry)'s compartments, queues, consumer groups " +
			"and IAM policies through its REST API.",
		Attributes: map[string]schema.Attribute{
			"endpoint": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "ferry's base URL, for example `http://127.0.0.1:8080`. Defaults to the `" +
					EnvEndpoint + "` environment variable.",
			},
			"token": schema.StringAttribute{
				Optional:  true,
				Sensitive: true,
				MarkdownDescription: "The bearer token (a JWT of the tenancy to manage) sent with every request. " +
					"Defaults to the `" + EnvToken + "` environment variable.",
			},
		},
	}
}

func (p *ferryProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	for name, v := range map[string]types.String{"endpoint": cfg.Endpoint, "token": cfg.Token} {
		if v.IsUnknown() {
			resp.Diagnostics.AddAttributeError(path.Root(name), "Unknown ferry "+name,
				"The provider's "+name+" depends on a value known only after apply; set it to a value known at plan time.")
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	endpoint, token := os.Getenv(EnvEndpoint), os.Getenv(EnvToken)
	if !cfg.Endpoint.IsNull() {
		endpoint = cfg.Endpoint.ValueString()
	}
	if !cfg.Token.IsNull() {
		token = cfg.Token.ValueString()
	}
	if endpoint == "" {
		resp.Diagnostics.AddAttributeError(path.Root("endpoint"), "Missing ferry endpoint",
			"Set the provider's endpoint, or the "+EnvEndpoint+" environment variable, to ferry's base URL (for example http://127.0.0.1:8080).")
	} else if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		resp.Diagnostics.AddAttributeError(path.Root("endpoint"), "Invalid ferry endpoint",
			"The endpoint must be an http or https URL such as http://127.0.0.1:8080, not "+endpoint+".")
	}
	if token == "" {
		resp.Diagnostics.AddAttributeError(path.Root("token"), "Missing ferry token",
			"Set the provider's token, or the "+EnvToken+" environment variable, to a bearer token of the tenancy to manage "+
				"(make run prints one; ferry token mints one).")
	}
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := newClient(endpoint, token, "terraform-provider-ferry/"+p.version+" terraform/"+req.TerraformVersion)
	if err != nil {
		resp.Diagnostics.AddError("Cannot create the ferry client", err.Error())
		return
	}
	resp.DataSourceData, resp.ResourceData = c, c
}

func (p *ferryProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{newCompartmentResource, newQueueResource, newConsumerGroupResource, newPolicyResource}
}

func (p *ferryProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{newQueueDataSource, newQueuesDataSource, newCompartmentsDataSource,
		newConsumerGroupsDataSource, newPoliciesDataSource}
}
