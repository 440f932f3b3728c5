package provider

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// TestAccPolicy: create → import → name, description and statements changed in place → a new compartment
// replaces it → destroy.
func TestAccPolicy(t *testing.T) {
	a := newAcc(t)
	other := a.compartment("team")
	policy := func(compartment, name string, statements ...string) string {
		return a.config(`
resource "ferry_policy" "p" {
  compartment_id = %q
  name           = %q
  description    = "producers"
  statements     = %s
}`, compartment, name, quoted(statements...))
	}
	const p = "ferry_policy.p"
	push := "Allow group Producers to use queue-push in compartment team"
	pull := "Allow group Consumers to use queue-pull in compartment team"
	sameID, newID := statecheck.CompareValue(compare.ValuesSame()), statecheck.CompareValue(compare.ValuesDiffer())
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		CheckDestroy:             a.gone("ferry_policy", func(id string) bool { return a.getPolicy(id) != nil }),
		Steps: []resource.TestStep{
			{
				Config: policy(a.tenancy, "producers", push),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(p, "statements.#", "1"),
					resource.TestCheckResourceAttr(p, "statements.0", push),
					resource.TestCheckResourceAttr(p, "state", "ACTIVE"),
				),
				ConfigStateChecks: []statecheck.StateCheck{sameID.AddStateValue(p, tfjsonpath.New("id"))},
			},
			{ResourceName: p, ImportState: true, ImportStateVerify: true},
			{
				Config: policy(a.tenancy, "queue-users", push, pull),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(p, plancheck.ResourceActionUpdate)}},
				Check: withID(p, func(id string) error {
					got := a.getPolicy(id)
					if got == nil || got.Name != "queue-users" || !slices.Equal(got.Statements, []string{push, pull}) {
						return fmt.Errorf("the API has %+v", got)
					}
					return nil
				}),
				ConfigStateChecks: []statecheck.StateCheck{
					sameID.AddStateValue(p, tfjsonpath.New("id")), newID.AddStateValue(p, tfjsonpath.New("id"))},
			},
			{
				Config: policy(other, "queue-users", push, pull),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(p, plancheck.ResourceActionReplace)}},
				Check:             resource.TestCheckResourceAttr(p, "compartment_id", other),
				ConfigStateChecks: []statecheck.StateCheck{newID.AddStateValue(p, tfjsonpath.New("id"))},
			},
		},
	})
}

func (a *acc) getPolicy(id string) *sdk.Policy {
	resp, err := a.admin.GetPolicyWithResponse(context.Background(), id, &sdk.GetPolicyParams{})
	if err != nil || resp.StatusCode() != http.StatusOK || deleted(resp.JSON200.LifecycleState) {
		return nil
	}
	return resp.JSON200
}
