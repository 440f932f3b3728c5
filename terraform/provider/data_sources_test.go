package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccDataSources reads what a configuration manages through every data source.
func TestAccDataSources(t *testing.T) {
	a := newAcc(t)
	cfg := a.config(`
resource "ferry_compartment" "c" {
  compartment_id = %q
  name           = "reads"
}
resource "ferry_queue" "q" {
  compartment_id          = ferry_compartment.c.id
  display_name            = "orders"
  dead_letter_queue_delivery_count = 7
  consumer_groups_enabled = true
  freeform_tags           = { team = "orders" }
}
resource "ferry_queue" "other" {
  compartment_id = ferry_compartment.c.id
  display_name   = "other"
}
resource "ferry_consumer_group" "g" {
  queue_id     = ferry_queue.q.id
  display_name = "billing"
  filter       = ":team = \"billing\""
}
resource "ferry_policy" "p" {
  compartment_id = ferry_compartment.c.id
  name           = "readers"
  statements     = ["Allow group Readers to read queues in compartment reads"]
}

data "ferry_queue" "q" {
  id = ferry_queue.q.id
}
data "ferry_queues" "orders" {
  compartment_id = ferry_compartment.c.id
  display_name   = ferry_queue.q.display_name
}
data "ferry_queues" "all" {
  compartment_id = ferry_compartment.c.id
  depends_on     = [ferry_queue.q, ferry_queue.other]
}
data "ferry_compartments" "c" {
  compartment_id = ferry_compartment.c.compartment_id
  name           = ferry_compartment.c.name
}
data "ferry_consumer_groups" "g" {
  queue_id   = ferry_queue.q.id
  depends_on = [ferry_consumer_group.g]
}
data "ferry_policies" "p" {
  compartment_id = ferry_policy.p.compartment_id
}`, a.tenancy)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttrPair("data.ferry_queue.q", "display_name", "ferry_queue.q", "display_name"),
				resource.TestCheckResourceAttr("data.ferry_queue.q", "dead_letter_queue_delivery_count", "7"),
				resource.TestCheckResourceAttr("data.ferry_queue.q", "visibility_in_seconds", "30"),
				resource.TestCheckResourceAttr("data.ferry_queue.q", "consumer_groups_enabled", "true"),
				resource.TestCheckResourceAttr("data.ferry_queue.q", "freeform_tags.team", "orders"),
				resource.TestCheckResourceAttrPair("data.ferry_queue.q", "time_updated", "ferry_queue.q", "time_updated"),

				resource.TestCheckResourceAttr("data.ferry_queues.orders", "queues.#", "1"),
				resource.TestCheckResourceAttrPair("data.ferry_queues.orders", "queues.0.id", "ferry_queue.q", "id"),
				resource.TestCheckResourceAttr("data.ferry_queues.orders", "queues.0.consumer_groups_enabled", "true"),
				resource.TestCheckResourceAttr("data.ferry_queues.all", "queues.#", "2"),

				resource.TestCheckResourceAttr("data.ferry_compartments.c", "compartments.#", "1"),
				resource.TestCheckResourceAttrPair("data.ferry_compartments.c", "compartments.0.id", "ferry_compartment.c", "id"),

				resource.TestCheckResourceAttr("data.ferry_consumer_groups.g", "consumer_groups.#", "2"),
				resource.TestCheckTypeSetElemNestedAttrs("data.ferry_consumer_groups.g", "consumer_groups.*",
					map[string]string{"display_name": "billing", "filter": `:team = "billing"`, "is_primary": "false"}),
				resource.TestCheckTypeSetElemNestedAttrs("data.ferry_consumer_groups.g", "consumer_groups.*",
					map[string]string{"display_name": "primary", "is_primary": "true"}),

				resource.TestCheckResourceAttr("data.ferry_policies.p", "policies.#", "1"),
				resource.TestCheckResourceAttrPair("data.ferry_policies.p", "policies.0.id", "ferry_policy.p", "id"),
				resource.TestCheckResourceAttr("data.ferry_policies.p", "policies.0.statements.0",
					"Allow group Readers to read queues in compartment reads"),
			),
		}},
	})
}
