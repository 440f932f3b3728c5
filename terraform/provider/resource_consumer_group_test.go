package provider

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// TestAccConsumerGroup: create (with a filter and its own dead-letter count) → import → filter, name and
// enabled changed and the dead-letter count removed (the group inherits the queue's again) in place → another
// queue replaces it → destroy.
func TestAccConsumerGroup(t *testing.T) {
	a := newAcc(t)
	group := func(queue, name, filter string, enabled bool, extra string) string {
		return a.config(`
resource "ferry_queue" "a" {
  compartment_id          = %[1]q
  display_name            = "a"
  consumer_groups_enabled = true
}
resource "ferry_queue" "b" {
  compartment_id          = %[1]q
  display_name            = "b"
  consumer_groups_enabled = true
}
resource "ferry_consumer_group" "g" {
  queue_id     = ferry_queue.%[2]s.id
  display_name = %[3]q
  filter       = %[4]q
  is_enabled   = %[5]t
  %[6]s
}`, a.tenancy, queue, name, filter, enabled, extra)
	}
	const g = "ferry_consumer_group.g"
	sameID, newID := statecheck.CompareValue(compare.ValuesSame()), statecheck.CompareValue(compare.ValuesDiffer())
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		CheckDestroy:             a.gone("ferry_consumer_group", func(id string) bool { return a.getGroup(id) != nil }),
		Steps: []resource.TestStep{
			{
				Config: group("a", "billing", `:team = "billing"`, true, "dead_letter_queue_delivery_count = 5"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrPair(g, "queue_id", "ferry_queue.a", "id"),
					resource.TestCheckResourceAttr(g, "filter", `:team = "billing"`),
					resource.TestCheckResourceAttr(g, "dead_letter_queue_delivery_count", "5"),
					resource.TestCheckResourceAttr(g, "state", "ACTIVE"),
				),
				ConfigStateChecks: []statecheck.StateCheck{sameID.AddStateValue(g, tfjsonpath.New("id"))},
			},
			{ResourceName: g, ImportState: true, ImportStateVerify: true},
			{
				Config: group("a", "big-billing", `:team = "billing" AND :amount > 100`, false, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(g, plancheck.ResourceActionUpdate)}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckNoResourceAttr(g, "dead_letter_queue_delivery_count"),
					withID(g, func(id string) error {
						got := a.getGroup(id)
						if got == nil || got.DisplayName != "big-billing" || got.IsEnabled || got.DeadLetterQueueDeliveryCount != nil ||
							got.Filter != `:team = "billing" AND :amount > 100` {
							return fmt.Errorf("the API has %+v", got)
						}
						return nil
					}),
				),
				ConfigStateChecks: []statecheck.StateCheck{
					sameID.AddStateValue(g, tfjsonpath.New("id")), newID.AddStateValue(g, tfjsonpath.New("id"))},
			},
			{
				Config: group("b", "big-billing", `:team = "billing" AND :amount > 100`, false, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(g, plancheck.ResourceActionReplace)}},
				Check:             resource.TestCheckResourceAttrPair(g, "queue_id", "ferry_queue.b", "id"),
				ConfigStateChecks: []statecheck.StateCheck{newID.AddStateValue(g, tfjsonpath.New("id"))},
			},
		},
	})
}

func (a *acc) getGroup(id string) *sdk.ConsumerGroup {
	resp, err := a.admin.GetConsumerGroupWithResponse(context.Background(), id, &sdk.GetConsumerGroupParams{})
	if err != nil || resp.StatusCode() != http.StatusOK || deleted(resp.JSON200.LifecycleState) {
		return nil
	}
	return resp.JSON200
}
