package tests

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestWorkRequestsOfChanges: as in OCI, every change of a queue or a consumer group answers 202 with the
// opc-work-request-id of a work request; ferry makes these changes at once, so the work request is SUCCEEDED and
// names the resource (an OCI SDK learns a new queue's id from it). Its errors are none and its log has its steps.
func TestWorkRequestsOfChanges(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	child := client.NewCompartment(t, tenancyID, "child")

	// requireDone checks the work request of a change: SUCCEEDED, done, naming the resource with the action.
	requireDone := func(header http.Header, op sdk.WorkRequestOperationType, entity, id, uri string, action sdk.WorkRequestResourceActionType, compartmentID string) {
		t.Helper()
		wrID := header.Get("opc-work-request-id")
		require.True(t, strings.HasPrefix(wrID, "ocid1.workrequest."), "opc-work-request-id %q", wrID)
		get, err := client.GetWorkRequestWithResponse(ctx, wrID, &sdk.GetWorkRequestParams{})
		e2e.RequireStatus(t, get, err, http.StatusOK)
		w := get.JSON200
		require.Equal(t, op, w.OperationType)
		require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, w.Status)
		require.Equal(t, float32(100), w.PercentComplete)
		require.Equal(t, compartmentID, w.CompartmentId)
		require.NotNil(t, w.TimeStarted)
		require.NotNil(t, w.TimeFinished)
		require.Equal(t, []sdk.WorkRequestResource{{EntityType: entity, ActionType: action, Identifier: id, EntityUri: &uri}}, w.Resources)

		errs, err := client.ListWorkRequestErrorsWithResponse(ctx, wrID, &sdk.ListWorkRequestErrorsParams{})
		e2e.RequireStatus(t, errs, err, http.StatusOK)
		require.Empty(t, errs.JSON200.Items)
		logs, err := client.ListWorkRequestLogsWithResponse(ctx, wrID, &sdk.ListWorkRequestLogsParams{})
		e2e.RequireStatus(t, logs, err, http.StatusOK)
		require.Len(t, logs.JSON200.Items, 3)
		require.Contains(t, logs.JSON200.Items[2].Message, "succeeded")
	}

	created, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: "q"})
	e2e.RequireStatus(t, created, err, http.StatusAccepted)
	q := created.JSON202.Id
	require.NotEmpty(t, created.HTTPResponse.Header.Get("etag"))
	requireDone(created.HTTPResponse.Header, sdk.WorkRequestOperationTypeCREATEQUEUE, "queue", q, "/20210201/queues/"+q,
		sdk.WorkRequestResourceActionTypeCREATED, tenancyID)

	updated, err := client.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{
		Capabilities: &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS}}})
	e2e.RequireStatus(t, updated, err, http.StatusAccepted)
	requireDone(updated.HTTPResponse.Header, sdk.WorkRequestOperationTypeUPDATEQUEUE, "queue", q, "/20210201/queues/"+q,
		sdk.WorkRequestResourceActionTypeUPDATED, tenancyID)

	moved, err := client.ChangeQueueCompartmentWithResponse(ctx, q, &sdk.ChangeQueueCompartmentParams{},
		sdk.ChangeQueueCompartmentDetails{CompartmentId: child.Id})
	e2e.RequireStatus(t, moved, err, http.StatusAccepted)
	requireDone(moved.HTTPResponse.Header, sdk.WorkRequestOperationTypeMOVEQUEUE, "queue", q, "/20210201/queues/"+q,
		sdk.WorkRequestResourceActionTypeUPDATED, child.Id)

	g, err := client.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{QueueId: q, DisplayName: "g"})
	e2e.RequireStatus(t, g, err, http.StatusAccepted)
	gid := g.JSON202.Id
	requireDone(g.HTTPResponse.Header, sdk.WorkRequestOperationTypeCREATECONSUMERGROUP, "consumerGroup", gid,
		"/20210201/consumerGroups/"+gid, sdk.WorkRequestResourceActionTypeCREATED, child.Id)
	gu, err := client.UpdateConsumerGroupWithResponse(ctx, gid, &sdk.UpdateConsumerGroupParams{}, sdk.UpdateConsumerGroupDetails{Filter: e2e.Ptr(":a")})
	e2e.RequireStatus(t, gu, err, http.StatusAccepted)
	require.Equal(t, ":a", gu.JSON202.Filter)
	requireDone(gu.HTTPResponse.Header, sdk.WorkRequestOperationTypeUPDATECONSUMERGROUP, "consumerGroup", gid,
		"/20210201/consumerGroups/"+gid, sdk.WorkRequestResourceActionTypeUPDATED, child.Id)
	gd, err := client.DeleteConsumerGroupWithResponse(ctx, gid, &sdk.DeleteConsumerGroupParams{})
	e2e.RequireStatus(t, gd, err, http.StatusAccepted)
	requireDone(gd.HTTPResponse.Header, sdk.WorkRequestOperationTypeDELETECONSUMERGROUP, "consumerGroup", gid,
		"/20210201/consumerGroups/"+gid, sdk.WorkRequestResourceActionTypeDELETED, child.Id)

	// A refused change leaves no work request behind.
	before := len(workRequests(t, client, sdk.ListWorkRequestsParams{CompartmentId: &child.Id}))
	refused, err := client.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{IfMatch: e2e.Ptr("stale")}, sdk.UpdateQueueDetails{})
	e2e.RequireError(t, refused, err, http.StatusPreconditionFailed, "NoEtagMatch")
	require.Empty(t, refused.HTTPResponse.Header.Get("opc-work-request-id"))
	require.Len(t, workRequests(t, client, sdk.ListWorkRequestsParams{CompartmentId: &child.Id}), before)

	// The log of a background work request, a page at a time.
	wrID := client.StartQueueDelete(t, q)
	first, err := client.ListWorkRequestLogsWithResponse(ctx, wrID, &sdk.ListWorkRequestLogsParams{Limit: e2e.Ptr(1)})
	e2e.RequireStatus(t, first, err, http.StatusOK)
	require.Len(t, first.JSON200.Items, 1)
	require.Contains(t, first.JSON200.Items[0].Message, "accepted")
	bad, err := client.ListWorkRequestLogsWithResponse(ctx, wrID, &sdk.ListWorkRequestLogsParams{Page: e2e.Ptr("x")})
	e2e.RequireError(t, bad, err, http.StatusBadRequest, "InvalidParameter", "page")
}

// TestQueueOCIFields: defined tags and the custom encryption key are kept and returned; LARGE_MESSAGES raises a
// message's content limit from 256 KiB to 1 MiB; the CONSUMER_GROUPS capability names, filters and dead-letters
// the primary consumer group; a queue list needs no compartment.
func TestQueueOCIFields(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	tags := sdk.DefinedTags{"Operations": {"CostCenter": "42", "Tier": float64(1)}}
	key := "ocid1.key.oc1.phx.example"
	created, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{
		CompartmentId: tenancyID, DisplayName: "oci", DefinedTags: &tags, CustomEncryptionKeyId: &key,
		Capabilities: &[]sdk.Capability{{Type: sdk.CapabilityTypeLARGEMESSAGES}, {Type: sdk.CapabilityTypeCONSUMERGROUPS,
			PrimaryConsumerGroupDisplayName: e2e.Ptr("main"), PrimaryConsumerGroupFilter: e2e.Ptr(`:kind = "order"`),
			PrimaryConsumerGroupDeadLetterQueueDeliveryCount: e2e.Ptr(3)}},
	})
	e2e.RequireStatus(t, created, err, http.StatusAccepted)
	q := created.JSON202
	require.Equal(t, tags, q.DefinedTags)
	require.Equal(t, &key, q.CustomEncryptionKeyId)
	require.ElementsMatch(t, []sdk.Capability{{Type: sdk.CapabilityTypeLARGEMESSAGES}, {Type: sdk.CapabilityTypeCONSUMERGROUPS,
		IsPrimaryConsumerGroupEnabled: e2e.Ptr(true), PrimaryConsumerGroupDisplayName: e2e.Ptr("main"),
		PrimaryConsumerGroupFilter: e2e.Ptr(`:kind = "order"`), PrimaryConsumerGroupDeadLetterQueueDeliveryCount: e2e.Ptr(3)}},
		*q.Capabilities)

	// The primary group is the capability's: named, filtered, dead-lettering after 3 deliveries.
	primary, err := client.GetConsumerGroupWithResponse(ctx, q.Id, &sdk.GetConsumerGroupParams{})
	e2e.RequireStatus(t, primary, err, http.StatusOK)
	require.Equal(t, "main", primary.JSON200.DisplayName)
	require.Equal(t, `:kind = "order"`, primary.JSON200.Filter)
	require.Equal(t, e2e.Ptr(3), primary.JSON200.DeadLetterQueueDeliveryCount)
	res := client.Put(t, q.Id, e2e.WithAttrs("order", map[string]any{"kind": "order"}), e2e.WithAttrs("refund", map[string]any{"kind": "refund"}))
	require.Equal(t, []int{1, 0}, e2e.GroupCounts(res), "the primary group's filter decides what it takes")
	require.Equal(t, []string{"order"}, e2e.Contents(client.Get(t, q.Id, e2e.Limit(10))))
	badFilter, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{
		Capabilities: &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, PrimaryConsumerGroupFilter: e2e.Ptr(":kind =")}}})
	e2e.RequireError(t, badFilter, err, http.StatusBadRequest, "InvalidParameter", "capabilities[0].primaryConsumerGroupFilter")

	// Contents: up to 1 MiB with LARGE_MESSAGES, 256 KiB without.
	big := strings.Repeat("x", 300<<10)
	client.Put(t, q.Id, e2e.WithAttrs(big, map[string]any{"kind": "order"}))
	plain := client.NewQueue(t, tenancyID)
	tooBig := client.PutErr(t, plain, e2e.Msg(big))
	e2e.RequireError(t, tooBig, nil, http.StatusBadRequest, "InvalidParameter", "messages[0].content")
	off, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{
		Capabilities: &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS}}, DefinedTags: &sdk.DefinedTags{}})
	e2e.RequireStatus(t, off, err, http.StatusAccepted)
	require.Len(t, *off.JSON202.Capabilities, 1, "a list of capabilities replaces the queue's")
	require.Empty(t, off.JSON202.DefinedTags)
	require.Equal(t, &key, off.JSON202.CustomEncryptionKeyId, "absent fields are unchanged")
	require.Equal(t, "main", *(*off.JSON202.Capabilities)[0].PrimaryConsumerGroupDisplayName, "so are the primary group's")
	tooBig = client.PutErr(t, q.Id, e2e.Msg(big))
	e2e.RequireError(t, tooBig, nil, http.StatusBadRequest, "InvalidParameter", "messages[0].content")
	twice, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{
		Capabilities: &[]sdk.Capability{{Type: sdk.CapabilityTypeLARGEMESSAGES}, {Type: sdk.CapabilityTypeLARGEMESSAGES}}})
	e2e.RequireError(t, twice, err, http.StatusBadRequest, "InvalidParameter", "capabilities[1]")

	// Lists: by id without a compartment (the summary names the capabilities and tags), and the root's without
	// either.
	list, err := client.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{Id: &q.Id})
	e2e.RequireStatus(t, list, err, http.StatusOK)
	require.Len(t, list.JSON200.Items, 1)
	require.Equal(t, q.Id, list.JSON200.Items[0].Id)
	require.Equal(t, &[]sdk.QueueSummaryCapabilities{sdk.QueueSummaryCapabilitiesCONSUMERGROUPS}, list.JSON200.Items[0].Capabilities)
	require.ElementsMatch(t, []string{q.Id, plain}, client.QueueIDs(t, sdk.ListQueuesParams{}))
}

// workRequests lists work requests (every page).
func workRequests(t *testing.T, client *e2e.Client, p sdk.ListWorkRequestsParams) []sdk.WorkRequest {
	t.Helper()
	var all []sdk.WorkRequest
	for range 100 {
		resp, err := client.ListWorkRequestsWithResponse(context.Background(), &p)
		e2e.RequireStatus(t, resp, err, http.StatusOK)
		all = append(all, resp.JSON200.Items...)
		next := resp.HTTPResponse.Header.Get("opc-next-page")
		if next == "" {
			return all
		}
		p.Page = &next
	}
	t.Fatal("pagination did not end")
	return nil
}
