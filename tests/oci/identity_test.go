package oci

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/identity"
	"github.com/stretchr/testify/require"
)

// identityOperations are identity.IdentityClient's compartment operations, served under /20160918.
var identityOperations = map[string]func(*testing.T, *env){
	"CreateCompartment": testCreateCompartment,
	"GetCompartment":    testGetCompartment,
	"ListCompartments":  testListCompartments,
	"UpdateCompartment": testUpdateCompartment,
	"DeleteCompartment": testDeleteCompartment,
}

func TestIdentityClient(t *testing.T) {
	t.Parallel()
	runOperations(t, start(t), identityOperations)
}

func testCreateCompartment(t *testing.T, e *env) {
	c := ctx(t)
	resp, err := e.identity.CreateCompartment(c, identity.CreateCompartmentRequest{CreateCompartmentDetails: identity.CreateCompartmentDetails{
		CompartmentId: &e.tenancy, Name: common.String("payments"), Description: common.String("the payments team"),
		FreeformTags: map[string]string{"team": "payments"},
	}})
	noError(t, resp.RawResponse, err)
	require.True(t, strings.HasPrefix(*resp.Id, "ocid1.compartment."), *resp.Id)
	requireField(t, e.tenancy, resp.CompartmentId)
	requireField(t, "payments", resp.Name)
	requireField(t, "the payments team", resp.Description)
	require.Equal(t, identity.CompartmentLifecycleStateActive, resp.LifecycleState)
	require.Equal(t, map[string]string{"team": "payments"}, resp.FreeformTags)
	require.Empty(t, resp.DefinedTags)
	require.NotNil(t, resp.TimeCreated)
	require.NotEmpty(t, *resp.Etag)
	require.NotEmpty(t, *resp.OpcRequestId)

	// The same compartment through ferry's own API.
	native, etag := e.ferry.CompartmentWithETag(t, *resp.Id)
	require.Equal(t, "the payments team", native.Description)
	require.Equal(t, *resp.Etag, etag)

	// A sibling of the same name: 409 Conflict, as the SDK parses it.
	_, err = e.identity.CreateCompartment(c, identity.CreateCompartmentRequest{CreateCompartmentDetails: identity.CreateCompartmentDetails{
		CompartmentId: &e.tenancy, Name: common.String("payments"), Description: common.String("again"),
	}, RequestMetadata: once()})
	requireServiceError(t, err, http.StatusConflict, "Conflict")
}

func testGetCompartment(t *testing.T, e *env) {
	c := ctx(t)
	created := e.ferry.NewCompartment(t, e.tenancy, "get-me")
	_, etag := e.ferry.CompartmentWithETag(t, created.Id)
	resp, err := e.identity.GetCompartment(c, identity.GetCompartmentRequest{CompartmentId: &created.Id})
	noError(t, resp.RawResponse, err)
	requireField(t, created.Id, resp.Id)
	requireField(t, e.tenancy, resp.CompartmentId)
	requireField(t, "get-me", resp.Name)
	requireField(t, "", resp.Description)
	require.Equal(t, identity.CompartmentLifecycleStateActive, resp.LifecycleState)
	require.True(t, resp.TimeCreated.Equal(created.TimeCreated), "%v != %v", resp.TimeCreated, created.TimeCreated)
	requireField(t, etag, resp.Etag)

	// The root compartment: the tenancy, its own parent.
	root, err := e.identity.GetCompartment(c, identity.GetCompartmentRequest{CompartmentId: &e.tenancy})
	noError(t, root.RawResponse, err)
	requireField(t, e.tenancy, root.Id)
	requireField(t, e.tenancy, root.CompartmentId)
}

func testListCompartments(t *testing.T, e *env) {
	c := ctx(t)
	parent := e.compartment(t)
	names := []string{"m", "c", "x", "a", "q"}
	var byCreation []string
	for _, n := range names {
		byCreation = append(byCreation, e.ferry.NewCompartment(t, parent, n).Id)
	}
	newestFirst := slices.Clone(byCreation)
	slices.Reverse(newestFirst)

	// Pages of 2 (a bare JSON array each), newest first by default.
	req := identity.ListCompartmentsRequest{CompartmentId: &parent, Limit: common.Int(2)}
	var ids []string
	pages := 0
	for {
		resp, err := e.identity.ListCompartments(c, req)
		noError(t, resp.RawResponse, err)
		pages++
		require.LessOrEqual(t, len(resp.Items), 2)
		for _, item := range resp.Items {
			requireField(t, parent, item.CompartmentId)
			ids = append(ids, *item.Id)
		}
		if resp.OpcNextPage == nil {
			break
		}
		req.Page = resp.OpcNextPage
		require.Less(t, pages, 10)
	}
	require.Equal(t, newestFirst, ids)
	require.Equal(t, 3, pages)

	list := func(req identity.ListCompartmentsRequest) []identity.Compartment {
		t.Helper()
		resp, err := e.identity.ListCompartments(c, req)
		noError(t, resp.RawResponse, err)
		require.Nil(t, resp.OpcNextPage)
		return resp.Items
	}
	names = nil
	for _, item := range list(identity.ListCompartmentsRequest{CompartmentId: &parent, SortBy: identity.ListCompartmentsSortByName}) {
		names = append(names, *item.Name)
	}
	require.Equal(t, []string{"a", "c", "m", "q", "x"}, names)
	named := list(identity.ListCompartmentsRequest{CompartmentId: &parent, Name: common.String("q"),
		LifecycleState: identity.CompartmentLifecycleStateActive})
	require.Len(t, named, 1)
	requireField(t, byCreation[4], named[0].Id)

	// The subtree, with accessLevel ACCESSIBLE (the administrator may inspect all of it).
	deep := e.ferry.NewCompartment(t, byCreation[0], "deep").Id
	subtree := list(identity.ListCompartmentsRequest{CompartmentId: &parent, CompartmentIdInSubtree: common.Bool(true),
		AccessLevel: identity.ListCompartmentsAccessLevelAccessible, SortOrder: identity.ListCompartmentsSortOrderAsc})
	require.Len(t, subtree, len(byCreation)+1)
	require.Equal(t, deep, *subtree[len(subtree)-1].Id, "oldest first")
	for _, item := range subtree {
		require.Equal(t, common.Bool(true), item.IsAccessible, "%v", item.Name)
	}
}

func testUpdateCompartment(t *testing.T, e *env) {
	c := ctx(t)
	created := e.ferry.NewCompartment(t, e.tenancy, "before")
	got, err := e.identity.GetCompartment(c, identity.GetCompartmentRequest{CompartmentId: &created.Id})
	noError(t, got.RawResponse, err)

	resp, err := e.identity.UpdateCompartment(c, identity.UpdateCompartmentRequest{CompartmentId: &created.Id, IfMatch: got.Etag,
		UpdateCompartmentDetails: identity.UpdateCompartmentDetails{Name: common.String("after"), Description: common.String("renamed"),
			FreeformTags: map[string]string{"state": "renamed"}}})
	noError(t, resp.RawResponse, err)
	requireField(t, created.Id, resp.Id)
	requireField(t, "after", resp.Name)
	requireField(t, "renamed", resp.Description)
	require.Equal(t, map[string]string{"state": "renamed"}, resp.FreeformTags)
	require.NotEqual(t, *got.Etag, *resp.Etag)

	// The etag read before the update is stale now.
	_, err = e.identity.UpdateCompartment(c, identity.UpdateCompartmentRequest{CompartmentId: &created.Id, IfMatch: got.Etag,
		UpdateCompartmentDetails: identity.UpdateCompartmentDetails{Description: common.String("lost")}, RequestMetadata: once()})
	requireServiceError(t, err, http.StatusPreconditionFailed, "NoEtagMatch")
	after, _ := e.ferry.CompartmentWithETag(t, created.Id)
	require.Equal(t, "renamed", after.Description)
}

func testDeleteCompartment(t *testing.T, e *env) {
	c := ctx(t)
	parent := e.ferry.NewCompartment(t, e.tenancy, "parent").Id
	child := e.ferry.NewCompartment(t, parent, "child").Id

	// Not empty: refused at once (the SDK would retry a 409 IncorrectState by default).
	_, err := e.identity.DeleteCompartment(c, identity.DeleteCompartmentRequest{CompartmentId: &parent, RequestMetadata: once()})
	requireServiceError(t, err, http.StatusConflict, "IncorrectState")

	resp, err := e.identity.DeleteCompartment(c, identity.DeleteCompartmentRequest{CompartmentId: &child})
	noError(t, resp.RawResponse, err)
	require.Equal(t, http.StatusAccepted, resp.RawResponse.StatusCode)
	require.NotNil(t, resp.OpcWorkRequestId)

	// The identity work request the SDK's users follow.
	wr, err := e.identity.GetWorkRequest(c, identity.GetWorkRequestRequest{WorkRequestId: resp.OpcWorkRequestId})
	noError(t, wr.RawResponse, err)
	require.Equal(t, resp.OpcWorkRequestId, wr.Id)
	require.Equal(t, identity.WorkRequestOperationTypeCompartment, wr.OperationType)
	require.Equal(t, identity.WorkRequestStatusSucceeded, wr.Status)
	requireField(t, parent, wr.CompartmentId)
	require.InDelta(t, 100, *wr.PercentComplete, 0)
	require.Len(t, wr.Resources, 1)
	requireField(t, child, wr.Resources[0].Identifier)
	require.Equal(t, identity.WorkRequestResourceActionTypeDeleted, wr.Resources[0].ActionType)

	deleted, err := e.identity.GetCompartment(c, identity.GetCompartmentRequest{CompartmentId: &child})
	noError(t, deleted.RawResponse, err)
	require.Equal(t, identity.CompartmentLifecycleStateDeleted, deleted.LifecycleState)
	resp, err = e.identity.DeleteCompartment(c, identity.DeleteCompartmentRequest{CompartmentId: &parent})
	noError(t, resp.RawResponse, err) // empty now
}
