package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// workRequestStub answers GetWorkRequest with status and ListWorkRequestErrors with one error. A real server's
// queue deletion does not fail on demand, so the failure path is driven by this stub of the two calls.
func workRequestStub(t *testing.T, status sdk.WorkRequestStatus) *client {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "application/json")
		w.Header().Set("opc-request-id", "stub-request")
		var body any
		switch {
		case strings.HasSuffix(r.URL.Path, "/errors"):
			body = sdk.WorkRequestErrorCollection{Items: []sdk.WorkRequestError{
				{Code: "InternalServerError", Message: "the messages could not be removed", Timestamp: time.Now()}}}
		default:
			body = sdk.WorkRequest{Id: "wr", OperationType: sdk.WorkRequestOperationTypeDELETEQUEUE, Status: status,
				PercentComplete: 50, Resources: []sdk.WorkRequestResource{}, TimeAccepted: time.Now()}
		}
		require.NoError(t, json.NewEncoder(w).Encode(body))
	}))
	t.Cleanup(hs.Close)
	c, err := newClient(hs.URL, "token", "test")
	require.NoError(t, err)
	return c
}

func TestWaitWorkRequestFailed(t *testing.T) {
	err := workRequestStub(t, sdk.WorkRequestStatusFAILED).waitWorkRequest(context.Background(), "wr")
	require.ErrorContains(t, err, "DELETE_QUEUE) FAILED: InternalServerError: the messages could not be removed")
}

func TestWaitWorkRequestTimesOut(t *testing.T) {
	// Long enough for the first poll to answer on a loaded machine under -race (300 ms was not, once).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := workRequestStub(t, sdk.WorkRequestStatusINPROGRESS).waitWorkRequest(ctx, "wr")
	require.ErrorContains(t, err, "timed out waiting for work request wr (DELETE_QUEUE, IN_PROGRESS, 50% complete)")
}

// TestAPIErrorNamesTheAttribute: the API's message names its field; the diagnostic goes on that attribute.
func TestAPIErrorNamesTheAttribute(t *testing.T) {
	for msg, want := range map[string]string{
		"displayName: must be 1 to 255 characters":   "displayName",
		"freeformTags.team: at most 256 characters":  "freeformTags",
		"capabilities[0]: CONSUMER_GROUPS is listed": "capabilities",
		"the compartment is not empty":               "",
	} {
		require.Equal(t, want, (&apiError{message: msg}).field(), msg)
	}
	require.Equal(t, "dead_letter_queue_delivery_count", snakeCase("deadLetterQueueDeliveryCount"))
}

// TestSchemasAgreeWithTheSpec: a setting's range is the same where the spec states it for creates, updates and
// the queue itself, so the one the provider reads (CreateQueueDetails') holds for every call.
func TestSchemasAgreeWithTheSpec(t *testing.T) {
	for _, apiName := range queueSettings {
		lo, hi := field("CreateQueueDetails", apiName).intBounds()
		for _, schema := range []string{"Queue", "UpdateQueueDetails"} {
			if apiName == "retentionInSeconds" && schema == "UpdateQueueDetails" {
				continue // cannot change: the provider replaces the queue
			}
			l, h := field(schema, apiName).intBounds()
			require.Equal(t, [2]int64{lo, hi}, [2]int64{l, h}, "%s.%s", schema, apiName)
		}
	}
	for _, p := range []string{"displayName", "filter"} {
		require.Equal(t, field("CreateConsumerGroupDetails", p).schema.MaxLength, field("UpdateConsumerGroupDetails", p).schema.MaxLength, p)
	}
	for _, p := range []string{"name", "description"} {
		require.Equal(t, field("CreateCompartmentDetails", p).schema.MaxLength, field("UpdateCompartmentDetails", p).schema.MaxLength, p)
		require.Equal(t, field("CreatePolicyDetails", p).schema.MaxLength, field("UpdatePolicyDetails", p).schema.MaxLength, p)
	}
}
