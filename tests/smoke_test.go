// Package tests holds ferry's black-box end-to-end tests: a real server (tests/testserver) on a real PostgreSQL,
// driven over HTTP through the generated Go SDK.
package tests

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/persistence/testdb"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func TestSmokeCreateAndListQueue(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()

	created, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{
		CompartmentId: tenancyID, DisplayName: "orders",
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, created.StatusCode(), string(created.Body))
	require.Equal(t, "orders", created.JSON202.DisplayName)
	require.Equal(t, 86400, created.JSON202.RetentionInSeconds)

	list, err := client.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, list.StatusCode())
	require.Len(t, list.JSON200.Items, 1)
}
