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
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// TestAccCompartment: create → import → rename, description and tags cleared in place → a new parent replaces
// it → destroy.
func TestAccCompartment(t *testing.T) {
	a := newAcc(t)
	parent := a.compartment("parent")
	compartment := func(parentID, name, extra string) string {
		return a.config(`
resource "ferry_compartment" "c" {
  compartment_id = %q
  name           = %q
  %s
}`, parentID, name, extra)
	}
	const c = "ferry_compartment.c"
	sameID, newID := statecheck.CompareValue(compare.ValuesSame()), statecheck.CompareValue(compare.ValuesDiffer())
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		CheckDestroy:             a.gone("ferry_compartment", a.compartmentExists),
		Steps: []resource.TestStep{
			{
				Config: compartment(a.tenancy, "orders", `description = "the orders team"
  freeform_tags = { team = "orders" }`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(c, "compartment_id", a.tenancy),
					resource.TestCheckResourceAttr(c, "description", "the orders team"),
					resource.TestCheckResourceAttr(c, "freeform_tags.team", "orders"),
					resource.TestCheckResourceAttr(c, "state", "ACTIVE"),
				),
				ConfigStateChecks: []statecheck.StateCheck{sameID.AddStateValue(c, tfjsonpath.New("id"))},
			},
			{ResourceName: c, ImportState: true, ImportStateVerify: true},
			{
				Config: compartment(a.tenancy, "orders-eu", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(c, plancheck.ResourceActionUpdate)}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(c, "description", ""),
					resource.TestCheckResourceAttr(c, "freeform_tags.%", "0"),
					withID(c, func(id string) error {
						got := a.getCompartment(id)
						if got == nil || got.Name != "orders-eu" || got.Description != "" || len(got.FreeformTags) != 0 {
							return fmt.Errorf("the API has %+v", got)
						}
						return nil
					}),
				),
				ConfigStateChecks: []statecheck.StateCheck{
					sameID.AddStateValue(c, tfjsonpath.New("id")), newID.AddStateValue(c, tfjsonpath.New("id"))},
			},
			{
				Config: compartment(parent, "orders-eu", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(c, plancheck.ResourceActionReplace)}},
				Check:             resource.TestCheckResourceAttr(c, "compartment_id", parent),
				ConfigStateChecks: []statecheck.StateCheck{newID.AddStateValue(c, tfjsonpath.New("id"))},
			},
		},
	})
}

func (a *acc) getCompartment(id string) *sdk.Compartment {
	resp, err := a.admin.GetCompartmentWithResponse(context.Background(), id, &sdk.GetCompartmentParams{})
	if err != nil || resp.StatusCode() != http.StatusOK || deleted(resp.JSON200.LifecycleState) {
		return nil
	}
	return resp.JSON200
}

func (a *acc) compartmentExists(id string) bool { return a.getCompartment(id) != nil }

// gone is a CheckDestroy: no resource of type in the state still exists.
func (a *acc) gone(typ string, exists func(id string) bool) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		for _, rs := range s.RootModule().Resources {
			if rs.Type == typ && exists(rs.Primary.ID) {
				return fmt.Errorf("%s %s still exists", typ, rs.Primary.ID)
			}
		}
		return nil
	}
}
