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
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
)

// TestAccDrift: every resource changed outside Terraform (through the API) shows up as an in-place update that
// puts the configuration back; every resource deleted outside Terraform leaves the state on refresh and is
// created again.
func TestAccDrift(t *testing.T) {
	a := newAcc(t)
	cfg := a.config(`
resource "ferry_compartment" "c" {
  compartment_id = %q
  name           = "drift"
  description    = "managed"
}
resource "ferry_queue" "q" {
  compartment_id          = ferry_compartment.c.id
  display_name            = "q"
  visibility_in_seconds   = 45
  consumer_groups_enabled = true
}
resource "ferry_consumer_group" "g" {
  queue_id     = ferry_queue.q.id
  display_name = "g"
  filter       = ":k = 1"
}
resource "ferry_policy" "p" {
  compartment_id = ferry_compartment.c.id
  name           = "drift"
  statements     = ["Allow group Readers to read queues in compartment drift"]
}`, a.tenancy)
	addrs := []string{"ferry_compartment.c", "ferry_queue.q", "ferry_consumer_group.g", "ferry_policy.p"}
	ids := map[string]string{}
	capture := func(s *terraform.State) error {
		for _, addr := range addrs {
			id, err := idOf(s, addr)
			if err != nil {
				return err
			}
			ids[addr] = id
		}
		return nil
	}
	expect := func(action plancheck.ResourceActionType) resource.ConfigPlanChecks {
		var checks []plancheck.PlanCheck
		for _, addr := range addrs {
			checks = append(checks, plancheck.ExpectResourceAction(addr, action))
		}
		return resource.ConfigPlanChecks{PreApply: checks}
	}
	ctx := context.Background()
	changeOutside := func() {
		c, etag := a.admin.CompartmentWithETag(t, ids["ferry_compartment.c"])
		resp, err := a.admin.UpdateCompartmentWithResponse(ctx, c.Id, &sdk.UpdateCompartmentParams{IfMatch: &etag},
			sdk.UpdateCompartmentDetails{Description: e2e.Ptr("changed by hand")})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
		qr, err := a.admin.UpdateQueueWithResponse(ctx, ids["ferry_queue.q"], &sdk.UpdateQueueParams{},
			sdk.UpdateQueueDetails{VisibilityInSeconds: e2e.Ptr(999), FreeformTags: &sdk.FreeformTags{"by": "hand"}})
		e2e.RequireStatus(t, qr, err, http.StatusAccepted)
		a.admin.ChangeGroup(t, ids["ferry_consumer_group.g"], sdk.UpdateConsumerGroupDetails{Filter: e2e.Ptr(":k = 2")})
		pr, err := a.admin.UpdatePolicyWithResponse(ctx, ids["ferry_policy.p"], &sdk.UpdatePolicyParams{},
			sdk.UpdatePolicyDetails{Statements: &[]string{"Allow group Writers to manage queues in compartment drift"}})
		e2e.RequireStatus(t, pr, err, http.StatusOK)
	}
	deleteOutside := func() {
		gr, err := a.admin.DeleteConsumerGroupWithResponse(ctx, ids["ferry_consumer_group.g"], &sdk.DeleteConsumerGroupParams{})
		e2e.RequireStatus(t, gr, err, http.StatusAccepted)
		wr := a.admin.StartQueueDelete(t, ids["ferry_queue.q"])
		require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, a.srv.WaitWorkRequest(t, a.admin, wr).Status)
		a.admin.RemovePolicy(t, ids["ferry_policy.p"])
		cr, err := a.admin.DeleteCompartmentWithResponse(ctx, ids["ferry_compartment.c"], &sdk.DeleteCompartmentParams{})
		e2e.RequireStatus(t, cr, err, http.StatusNoContent)
	}
	queueID := statecheck.CompareValue(compare.ValuesDiffer())
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		Steps: []resource.TestStep{
			{Config: cfg, Check: capture, ConfigStateChecks: []statecheck.StateCheck{
				queueID.AddStateValue("ferry_queue.q", tfjsonpath.New("id"))}},
			{
				PreConfig:        changeOutside,
				Config:           cfg,
				ConfigPlanChecks: expect(plancheck.ResourceActionUpdate),
				Check: func(*terraform.State) error {
					q := a.queue(ids["ferry_queue.q"])
					g := a.getGroup(ids["ferry_consumer_group.g"])
					c := a.getCompartment(ids["ferry_compartment.c"])
					p := a.getPolicy(ids["ferry_policy.p"])
					if q.VisibilityInSeconds != 45 || len(q.FreeformTags) != 0 || g.Filter != ":k = 1" || c.Description != "managed" ||
						p.Statements[0] != "Allow group Readers to read queues in compartment drift" {
						return fmt.Errorf("the configuration was not put back: %+v %+v %+v %+v", q, g, c, p)
					}
					return nil
				},
			},
			{
				PreConfig:         deleteOutside,
				Config:            cfg,
				ConfigPlanChecks:  expect(plancheck.ResourceActionCreate),
				ConfigStateChecks: []statecheck.StateCheck{queueID.AddStateValue("ferry_queue.q", tfjsonpath.New("id"))},
			},
		},
	})
}
