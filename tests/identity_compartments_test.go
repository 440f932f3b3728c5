package tests

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// OCI Identity's compartment operations (/20160918) through ferry's generated SDK: the same compartments as
// /20210201/compartments in OCI Identity's shapes. tests/oci drives the same routes with OCI's own SDK.

// newIdentityCompartment creates a compartment through /20160918 and returns it with its etag.
func newIdentityCompartment(t *testing.T, c *e2e.Client, parentID, name string) (sdk.IdentityCompartment, string) {
	t.Helper()
	resp, err := c.IdentityCreateCompartmentWithResponse(context.Background(), &sdk.IdentityCreateCompartmentParams{},
		sdk.IdentityCreateCompartmentDetails{CompartmentId: parentID, Name: name, Description: name + " compartment"})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	return *resp.JSON200, resp.HTTPResponse.Header.Get("etag")
}

func TestIdentityCompartmentLifecycle(t *testing.T) {
	t.Parallel()
	_, tenancyID, admin := testserver.StartAdmin(t)
	ctx := context.Background()

	resp, err := admin.IdentityCreateCompartmentWithResponse(ctx, &sdk.IdentityCreateCompartmentParams{}, sdk.IdentityCreateCompartmentDetails{
		CompartmentId: tenancyID, Name: "payments", Description: "the payments team",
		FreeformTags: &sdk.FreeformTags{"team": "payments"}, DefinedTags: &sdk.IdentityDefinedTags{},
	})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	created := *resp.JSON200
	require.True(t, strings.HasPrefix(created.Id, "ocid1.compartment.ferry.local."), created.Id)
	require.Equal(t, tenancyID, created.CompartmentId)
	require.Equal(t, "payments", created.Name)
	require.Equal(t, "the payments team", created.Description)
	require.Equal(t, sdk.IdentityCompartmentLifecycleStateACTIVE, created.LifecycleState)
	require.Equal(t, sdk.FreeformTags{"team": "payments"}, created.FreeformTags)
	require.Equal(t, sdk.IdentityDefinedTags{}, created.DefinedTags)
	require.Nil(t, created.IsAccessible, "isAccessible belongs to accessLevel=ACCESSIBLE lists")
	etag := resp.HTTPResponse.Header.Get("etag")
	require.NotEmpty(t, etag)
	// OCI's shape has no timeUpdated: the body carries exactly OCI's fields.
	require.NotContains(t, string(resp.Body), "timeUpdated")

	// The same compartment, the same etag, through both APIs.
	got, err := admin.IdentityGetCompartmentWithResponse(ctx, created.Id, &sdk.IdentityGetCompartmentParams{})
	e2e.RequireStatus(t, got, err, http.StatusOK)
	require.Equal(t, created, *got.JSON200)
	require.Equal(t, etag, got.HTTPResponse.Header.Get("etag"))
	native, nativeEtag := admin.CompartmentWithETag(t, created.Id)
	require.Equal(t, "the payments team", native.Description)
	require.Equal(t, etag, nativeEtag)

	// The root compartment answers its own id as its parent (OCI's SDKs require compartmentId).
	root, err := admin.IdentityGetCompartmentWithResponse(ctx, tenancyID, &sdk.IdentityGetCompartmentParams{})
	e2e.RequireStatus(t, root, err, http.StatusOK)
	require.Equal(t, tenancyID, root.JSON200.Id)
	require.Equal(t, tenancyID, root.JSON200.CompartmentId)

	// Update with the etag; a stale etag then answers 412 and changes nothing.
	upd, err := admin.IdentityUpdateCompartmentWithResponse(ctx, created.Id, &sdk.IdentityUpdateCompartmentParams{IfMatch: &etag},
		sdk.IdentityUpdateCompartmentDetails{Name: e2e.Ptr("billing"), Description: e2e.Ptr("renamed")})
	e2e.RequireStatus(t, upd, err, http.StatusOK)
	require.Equal(t, "billing", upd.JSON200.Name)
	require.Equal(t, "renamed", upd.JSON200.Description)
	require.Equal(t, sdk.FreeformTags{"team": "payments"}, upd.JSON200.FreeformTags, "absent fields stay")
	newEtag := upd.HTTPResponse.Header.Get("etag")
	require.NotEqual(t, etag, newEtag)
	upd, err = admin.IdentityUpdateCompartmentWithResponse(ctx, created.Id, &sdk.IdentityUpdateCompartmentParams{IfMatch: &etag},
		sdk.IdentityUpdateCompartmentDetails{Description: e2e.Ptr("lost")})
	e2e.RequireError(t, upd, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")

	// Not empty: 409, and nothing is deleted.
	child, _ := newIdentityCompartment(t, admin, created.Id, "ledger")
	del, err := admin.IdentityDeleteCompartmentWithResponse(ctx, created.Id, &sdk.IdentityDeleteCompartmentParams{})
	e2e.RequireError(t, del, err, http.StatusConflict, "IncorrectState", "not empty")

	// A compartment that is not deleted has no work request.
	wr, err := admin.IdentityGetWorkRequestWithResponse(ctx, "ocid1.workrequest"+strings.TrimPrefix(child.Id, "ocid1.compartment"),
		&sdk.IdentityGetWorkRequestParams{})
	e2e.RequireError(t, wr, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "workRequestId")

	// Delete: 202 with the work request, which has succeeded by then.
	del, err = admin.IdentityDeleteCompartmentWithResponse(ctx, child.Id, &sdk.IdentityDeleteCompartmentParams{})
	e2e.RequireStatus(t, del, err, http.StatusAccepted)
	wrID := del.HTTPResponse.Header.Get("opc-work-request-id")
	require.True(t, strings.HasPrefix(wrID, "ocid1.workrequest.ferry.local."), wrID)
	wr, err = admin.IdentityGetWorkRequestWithResponse(ctx, wrID, &sdk.IdentityGetWorkRequestParams{})
	e2e.RequireStatus(t, wr, err, http.StatusOK)
	w := *wr.JSON200
	require.Equal(t, wrID, w.Id)
	require.Equal(t, sdk.IdentityWorkRequestOperationTypeDELETECOMPARTMENT, w.OperationType)
	require.Equal(t, sdk.IdentityWorkRequestStatusSUCCEEDED, w.Status)
	require.Equal(t, created.Id, w.CompartmentId, "the work request is in the deleted compartment's parent")
	require.InDelta(t, 100, w.PercentComplete, 0)
	require.Equal(t, []sdk.IdentityWorkRequestResource{{Identifier: child.Id, EntityType: "compartment",
		ActionType: sdk.IdentityWorkRequestResourceActionTypeDELETED, EntityUri: e2e.Ptr("/20160918/compartments/" + child.Id)}}, w.Resources)
	require.NotNil(t, w.TimeFinished)
	require.False(t, w.TimeFinished.Before(w.TimeAccepted))

	gone, err := admin.IdentityGetCompartmentWithResponse(ctx, child.Id, &sdk.IdentityGetCompartmentParams{})
	e2e.RequireStatus(t, gone, err, http.StatusOK)
	require.Equal(t, sdk.IdentityCompartmentLifecycleStateDELETED, gone.JSON200.LifecycleState)
	// Deleting it again: it is gone.
	del, err = admin.IdentityDeleteCompartmentWithResponse(ctx, child.Id, &sdk.IdentityDeleteCompartmentParams{})
	e2e.RequireError(t, del, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	// A queue work request's id, or a compartment's, is not an identity work request.
	for _, id := range []string{child.Id, "ocid1.workrequest.ferry.local." + strings.Repeat("w", 32)} {
		wr, err = admin.IdentityGetWorkRequestWithResponse(ctx, id, &sdk.IdentityGetWorkRequestParams{})
		e2e.RequireError(t, wr, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	}

	// The root compartment cannot be deleted.
	del, err = admin.IdentityDeleteCompartmentWithResponse(ctx, tenancyID, &sdk.IdentityDeleteCompartmentParams{})
	e2e.RequireError(t, del, err, http.StatusConflict, "IncorrectState", "root")
}

func TestIdentityListCompartments(t *testing.T) {
	t.Parallel()
	tn := testserver.StartTenancy(t, "identity")
	admin, ctx := tn.Admin, context.Background()

	names := []string{"m", "c", "x", "a", "q"}
	var byCreation []string
	for _, n := range names {
		c, _ := newIdentityCompartment(t, admin, tn.ID, n)
		byCreation = append(byCreation, c.Id)
	}
	newest := slices.Clone(byCreation)
	slices.Reverse(newest)
	list := func(p sdk.IdentityListCompartmentsParams, c *e2e.Client) (ids []string, pages int) {
		t.Helper()
		for range 20 {
			resp, err := c.IdentityListCompartmentsWithResponse(ctx, &p)
			e2e.RequireStatus(t, resp, err, http.StatusOK)
			require.True(t, strings.HasPrefix(strings.TrimSpace(string(resp.Body)), "["), "a bare JSON array: %s", resp.Body)
			pages++
			for _, item := range *resp.JSON200 {
				ids = append(ids, item.Id)
			}
			next := resp.HTTPResponse.Header.Get("opc-next-page")
			if next == "" {
				return ids, pages
			}
			p.Page = &next
		}
		t.Fatal("pagination did not end")
		return nil, 0
	}

	ids, pages := list(sdk.IdentityListCompartmentsParams{CompartmentId: tn.ID, Limit: e2e.Ptr(2)}, admin)
	require.Equal(t, newest, ids, "newest first, every compartment once")
	require.Equal(t, 3, pages)
	ids, _ = list(sdk.IdentityListCompartmentsParams{CompartmentId: tn.ID, SortBy: e2e.Ptr(sdk.IdentityListCompartmentsParamsSortByNAME)}, admin)
	require.Equal(t, []string{byCreation[3], byCreation[1], byCreation[0], byCreation[4], byCreation[2]}, ids, "a, c, m, q, x")
	ids, _ = list(sdk.IdentityListCompartmentsParams{CompartmentId: tn.ID, SortBy: e2e.Ptr(sdk.IdentityListCompartmentsParamsSortByTIMECREATED),
		SortOrder: e2e.Ptr(sdk.SortOrderASC)}, admin)
	require.Equal(t, byCreation, ids)
	ids, _ = list(sdk.IdentityListCompartmentsParams{CompartmentId: tn.ID, Name: e2e.Ptr("q")}, admin)
	require.Equal(t, []string{byCreation[4]}, ids)

	// Deleted compartments only when asked for; INACTIVE, which ferry's never are, lists nothing.
	del, err := admin.IdentityDeleteCompartmentWithResponse(ctx, byCreation[0], &sdk.IdentityDeleteCompartmentParams{})
	e2e.RequireStatus(t, del, err, http.StatusAccepted)
	ids, _ = list(sdk.IdentityListCompartmentsParams{CompartmentId: tn.ID}, admin)
	require.NotContains(t, ids, byCreation[0])
	ids, _ = list(sdk.IdentityListCompartmentsParams{CompartmentId: tn.ID, LifecycleState: e2e.Ptr(sdk.IdentityCompartmentLifecycleStateDELETED)}, admin)
	require.Equal(t, []string{byCreation[0]}, ids)
	ids, _ = list(sdk.IdentityListCompartmentsParams{CompartmentId: tn.ID, LifecycleState: e2e.Ptr(sdk.IdentityCompartmentLifecycleStateINACTIVE)}, admin)
	require.Empty(t, ids)

	// The subtree, and what a principal who may inspect only compartment c's subtree sees of it.
	deep, _ := newIdentityCompartment(t, admin, byCreation[1], "deep")
	deeper, _ := newIdentityCompartment(t, admin, deep.Id, "deeper")
	inSubtree := sdk.IdentityListCompartmentsParams{CompartmentId: tn.ID, CompartmentIdInSubtree: e2e.Ptr(true)}
	ids, _ = list(inSubtree, admin)
	require.ElementsMatch(t, append(slices.Clone(byCreation[1:]), deep.Id, deeper.Id), ids)
	tn.Policy(t, tn.ID, "Allow group CViewers to inspect compartments in compartment c")
	viewer := tn.Client(t, "viewer", "CViewers")
	ids, _ = list(inSubtree, viewer)
	require.ElementsMatch(t, []string{deep.Id, deeper.Id}, ids, "only the compartments whose parent it may inspect")
	accessible := inSubtree
	accessible.AccessLevel = e2e.Ptr(sdk.IdentityListCompartmentsParamsAccessLevelACCESSIBLE)
	resp, err := viewer.IdentityListCompartmentsWithResponse(ctx, &accessible)
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	require.Len(t, *resp.JSON200, 2)
	for _, item := range *resp.JSON200 {
		require.Equal(t, e2e.Ptr(true), item.IsAccessible, item.Name)
	}
	// Its children list is its own to inspect.
	ids, _ = list(sdk.IdentityListCompartmentsParams{CompartmentId: byCreation[1], AccessLevel: accessible.AccessLevel}, viewer)
	require.Equal(t, []string{deep.Id}, ids)

	// Bad input: a page token, a sort field of the other API, an unknown compartment.
	for _, p := range []sdk.IdentityListCompartmentsParams{{CompartmentId: tn.ID, Page: e2e.Ptr("garbage")}} {
		resp, err := admin.IdentityListCompartmentsWithResponse(ctx, &p)
		e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "page")
	}
	raw := tn.Server.Call(t, tn.Token(t, "admin", "Administrators"), "GET", "/20160918/compartments?compartmentId="+tn.ID+"&sortBy=timeCreated", nil)
	e2e.RequireAPIError(t, raw.Status, raw.Body, http.StatusBadRequest, "InvalidParameter", "sortBy")
	missing := "ocid1.compartment.ferry.local." + strings.Repeat("a", 32)
	resp, err = admin.IdentityListCompartmentsWithResponse(ctx, &sdk.IdentityListCompartmentsParams{CompartmentId: missing})
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func TestIdentityCompartmentBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, admin := testserver.StartAdmin(t)
	ctx := context.Background()
	token := srv.AdminToken(t, tenancyID)

	// OCI Identity requires a description.
	raw := srv.Call(t, token, "POST", "/20160918/compartments", map[string]any{"compartmentId": tenancyID, "name": "nodesc"})
	e2e.RequireAPIError(t, raw.Status, raw.Body, http.StatusBadRequest, "MissingParameter", "description")
	// Defined tags need a tag namespace, which ferry does not have; an empty map is no tags.
	resp, err := admin.IdentityCreateCompartmentWithResponse(ctx, &sdk.IdentityCreateCompartmentParams{}, sdk.IdentityCreateCompartmentDetails{
		CompartmentId: tenancyID, Name: "tagged", Description: "d",
		DefinedTags: &sdk.IdentityDefinedTags{"Operations": {"CostCenter": "42"}},
	})
	e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "definedTags", "Operations")
	created, _ := newIdentityCompartment(t, admin, tenancyID, "plain")
	upd, err := admin.IdentityUpdateCompartmentWithResponse(ctx, created.Id, &sdk.IdentityUpdateCompartmentParams{},
		sdk.IdentityUpdateCompartmentDetails{DefinedTags: &sdk.IdentityDefinedTags{"Operations": {}}})
	e2e.RequireError(t, upd, err, http.StatusBadRequest, "InvalidParameter", "definedTags")
	// Fields of ferry's shape that OCI's has not.
	raw = srv.Call(t, token, "PUT", "/20160918/compartments/"+created.Id, map[string]any{"timeUpdated": "2020-01-01T00:00:00Z"})
	e2e.RequireAPIError(t, raw.Status, raw.Body, http.StatusBadRequest, "InvalidParameter", "timeUpdated")
	// Sibling names are unique across both APIs.
	resp, err = admin.IdentityCreateCompartmentWithResponse(ctx, &sdk.IdentityCreateCompartmentParams{},
		sdk.IdentityCreateCompartmentDetails{CompartmentId: tenancyID, Name: "PLAIN", Description: "d"})
	e2e.RequireError(t, resp, err, http.StatusConflict, "Conflict", "name")
	// A malformed work request id.
	wr, err := admin.IdentityGetWorkRequestWithResponse(ctx, "not-an-ocid", &sdk.IdentityGetWorkRequestParams{})
	e2e.RequireError(t, wr, err, http.StatusBadRequest, "InvalidParameter", "workRequestId")
}

// TestIdentityCompartmentIsolation: another tenancy's compartments, and the work request of another tenancy's
// deletion, answer 404 on every /20160918 operation, like missing ones.
func TestIdentityCompartmentIsolation(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	ownerTenancy, owner := srv.Admin(t, "owner")
	_, other := srv.Admin(t, "other")
	ctx := context.Background()
	theirs, etag := newIdentityCompartment(t, owner, ownerTenancy, "theirs")
	gone, _ := newIdentityCompartment(t, owner, ownerTenancy, "gone")
	del, err := owner.IdentityDeleteCompartmentWithResponse(ctx, gone.Id, &sdk.IdentityDeleteCompartmentParams{})
	e2e.RequireStatus(t, del, err, http.StatusAccepted)
	wrID := del.HTTPResponse.Header.Get("opc-work-request-id")

	get, err := other.IdentityGetCompartmentWithResponse(ctx, theirs.Id, &sdk.IdentityGetCompartmentParams{})
	e2e.RequireError(t, get, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	list, err := other.IdentityListCompartmentsWithResponse(ctx, &sdk.IdentityListCompartmentsParams{CompartmentId: ownerTenancy})
	e2e.RequireError(t, list, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	create, err := other.IdentityCreateCompartmentWithResponse(ctx, &sdk.IdentityCreateCompartmentParams{},
		sdk.IdentityCreateCompartmentDetails{CompartmentId: theirs.Id, Name: "intruder", Description: "d"})
	e2e.RequireError(t, create, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	upd, err := other.IdentityUpdateCompartmentWithResponse(ctx, theirs.Id, &sdk.IdentityUpdateCompartmentParams{IfMatch: &etag},
		sdk.IdentityUpdateCompartmentDetails{Name: e2e.Ptr("stolen")})
	e2e.RequireError(t, upd, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	del, err = other.IdentityDeleteCompartmentWithResponse(ctx, theirs.Id, &sdk.IdentityDeleteCompartmentParams{})
	e2e.RequireError(t, del, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	wr, err := other.IdentityGetWorkRequestWithResponse(ctx, wrID, &sdk.IdentityGetWorkRequestParams{})
	e2e.RequireError(t, wr, err, http.StatusNotFound, "NotAuthorizedOrNotFound")

	// Nothing changed for the owner.
	got, err := owner.IdentityGetCompartmentWithResponse(ctx, theirs.Id, &sdk.IdentityGetCompartmentParams{})
	e2e.RequireStatus(t, got, err, http.StatusOK)
	require.Equal(t, theirs, *got.JSON200)
	require.Equal(t, etag, got.HTTPResponse.Header.Get("etag"))
	wr, err = owner.IdentityGetWorkRequestWithResponse(ctx, wrID, &sdk.IdentityGetWorkRequestParams{})
	e2e.RequireStatus(t, wr, err, http.StatusOK)
}

// identityMatrixRows are TestIAMPermissionMatrix's rows of the /20160918 operations: the permissions of their
// /20210201 twins.
func identityMatrixRows() []iamMatrixRow {
	const v = "/20160918"
	return []iamMatrixRow{
		{op: "IdentityCreateCompartment", allow: "manage compartments", deny: []string{"use compartments", "manage queues"}, want: http.StatusOK,
			setup: func(_ *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/compartments", map[string]any{"compartmentId": m.mx, "name": "oci-created", "description": "d"}}
			}},
		{op: "IdentityGetCompartment", allow: "read compartments", deny: []string{"inspect compartments", "manage policies"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/compartments/" + m.child(t, "oci-get"), nil}
			}},
		{op: "IdentityListCompartments", allow: "inspect compartments", deny: []string{"manage queues", "manage policies"}, want: http.StatusOK,
			setup: func(_ *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/compartments?compartmentId=" + m.mx, nil}
			}},
		{op: "IdentityUpdateCompartment", allow: "use compartments", deny: []string{"read compartments"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"PUT", v + "/compartments/" + m.child(t, "oci-update"), map[string]any{"description": "changed"}}
			}},
		{op: "IdentityDeleteCompartment", allow: "manage compartments", deny: []string{"use compartments", "manage queue-family"}, want: http.StatusAccepted,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"DELETE", v + "/compartments/" + m.child(t, "oci-delete"), nil}
			}},
		{op: "IdentityGetWorkRequest", allow: "read compartments", deny: []string{"inspect compartments", "manage queues"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				id := m.child(t, "oci-deleted")
				resp := m.Server.Call(t, m.Server.AdminToken(t, m.ID), "DELETE", v+"/compartments/"+id, nil)
				require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
				return iamRequest{"GET", v + "/workRequests/" + resp.Header.Get("opc-work-request-id"), nil}
			}},
	}
}
