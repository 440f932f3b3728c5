package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// TestAccQueue: create (the API's defaults for what is left out) → import → every changeable setting, the
// CONSUMER_GROUPS capability, the tags and the compartment changed in place → a new retention replaces the queue
// → destroy, which waits for the deletion's work request.
func TestAccQueue(t *testing.T) {
	a := newAcc(t)
	other := a.compartment("moved")
	queue := func(compartment, name string, visibility, retention int, groups bool, tags string) string {
		return a.config(`
resource "ferry_queue" "q" {
  compartment_id          = %q
  display_name            = %q
  visibility_in_seconds   = %d
  retention_in_seconds    = %d
  consumer_groups_enabled = %t
  freeform_tags           = %s
}`, compartment, name, visibility, retention, groups, tags)
	}
	const q = "ferry_queue.q"
	sameID := statecheck.CompareValue(compare.ValuesSame())
	newID := statecheck.CompareValue(compare.ValuesDiffer())
	var replaced string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		CheckDestroy:             a.queuesGone,
		Steps: []resource.TestStep{
			{
				Config: queue(a.tenancy, "orders", 60, 3600, false, `{ team = "payments" }`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(q, "visibility_in_seconds", "60"),
					resource.TestCheckResourceAttr(q, "timeout_in_seconds", "30"),
					resource.TestCheckResourceAttr(q, "max_size_in_bytes", "2147483648"),
					resource.TestCheckResourceAttr(q, "channel_consumption_limit", "100"),
					resource.TestCheckResourceAttr(q, "is_single_active_consumer", "false"),
					resource.TestCheckResourceAttr(q, "consumer_groups_enabled", "false"),
					resource.TestCheckResourceAttr(q, "state", "ACTIVE"),
					resource.TestCheckResourceAttr(q, "messages_endpoint", a.srv.URL),
					resource.TestCheckResourceAttr(q, "freeform_tags.team", "payments"),
					resource.TestCheckResourceAttrSet(q, "time_created"),
					withID(q, func(id string) error {
						got := a.queue(id)
						if got == nil || got.VisibilityInSeconds != 60 || got.RetentionInSeconds != 3600 || got.DisplayName != "orders" {
							return fmt.Errorf("the API has %+v", got)
						}
						return nil
					}),
				),
				ConfigStateChecks: []statecheck.StateCheck{sameID.AddStateValue(q, tfjsonpath.New("id"))},
			},
			{ResourceName: q, ImportState: true, ImportStateVerify: true},
			{
				Config: queue(other, "orders-v2", 120, 3600, true, `{}`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(q, plancheck.ResourceActionUpdate)}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(q, "compartment_id", other),
					resource.TestCheckResourceAttr(q, "consumer_groups_enabled", "true"),
					resource.TestCheckResourceAttr(q, "freeform_tags.%", "0"),
					withID(q, func(id string) error {
						replaced = id
						got := a.queue(id)
						if got == nil || got.CompartmentId != other || got.VisibilityInSeconds != 120 || got.DisplayName != "orders-v2" ||
							!hasCapability(got.Capabilities, sdk.CapabilityTypeCONSUMERGROUPS) || len(got.FreeformTags) != 0 {
							return fmt.Errorf("the API has %+v", got)
						}
						return nil
					}),
				),
				ConfigStateChecks: []statecheck.StateCheck{
					sameID.AddStateValue(q, tfjsonpath.New("id")), newID.AddStateValue(q, tfjsonpath.New("id"))},
			},
			{
				Config: queue(other, "orders-v2", 120, 7200, true, `{}`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(q, plancheck.ResourceActionReplace)}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(q, "retention_in_seconds", "7200"),
					func(*terraform.State) error {
						if a.queue(replaced) != nil {
							return fmt.Errorf("the replaced queue %s is still there", replaced)
						}
						return nil
					},
				),
				ConfigStateChecks: []statecheck.StateCheck{newID.AddStateValue(q, tfjsonpath.New("id"))},
			},
		},
	})
}

// queuesGone is a CheckDestroy: every queue of the state is deleted.
func (a *acc) queuesGone(s *terraform.State) error {
	for _, rs := range s.RootModule().Resources {
		if rs.Type == "ferry_queue" {
			if q := a.queue(rs.Primary.ID); q != nil {
				return fmt.Errorf("queue %s is still %s", q.Id, q.LifecycleState)
			}
		}
	}
	return nil
}
