package oci

import (
	"context"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/identity"
	"github.com/oracle/oci-go-sdk/v65/queue"
	"github.com/stretchr/testify/require"
)

// runOperations runs one parallel subtest per operation, named after the SDK's method, on one server.
func runOperations(t *testing.T, e *env, operations map[string]func(*testing.T, *env)) {
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range operations {
			if !yield(name) {
				return
			}
		}
	}) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer failOnPanic(t)
			operations[name](t, e)
		})
	}
}

// failOnPanic turns a panic of a test (a field the SDK did not find, dereferenced) into that test's failure:
// a panic would end every test of the binary, and the other operations' results with it.
func failOnPanic(t *testing.T) {
	if r := recover(); r != nil {
		t.Fatalf("panic: %v\n%s", r, debug.Stack())
	}
}

// sdkOperations are the API operations of an SDK client: its methods func(context.Context, XRequest)
// (XResponse, error).
func sdkOperations(client any) []string {
	ctxType := reflect.TypeFor[context.Context]()
	errType := reflect.TypeFor[error]()
	var ops []string
	typ := reflect.TypeOf(client)
	for i := range typ.NumMethod() {
		m := typ.Method(i).Type // the receiver is the first argument
		if m.NumIn() == 3 && m.In(1) == ctxType && strings.HasSuffix(m.In(2).Name(), "Request") &&
			m.NumOut() == 2 && strings.HasSuffix(m.Out(0).Name(), "Response") && m.Out(1) == errType {
			ops = append(ops, typ.Method(i).Name)
		}
	}
	return ops
}

// TestEveryOperationIsCovered: the suite has a test for every operation of QueueAdminClient and QueueClient (a new
// SDK version's new operation fails here until it has one), and for the five compartment operations of
// IdentityClient.
func TestEveryOperationIsCovered(t *testing.T) {
	t.Parallel()
	keys := func(m map[string]func(*testing.T, *env)) []string {
		return slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
	}
	admin, data := sdkOperations(queue.QueueAdminClient{}), sdkOperations(queue.QueueClient{})
	require.Len(t, admin, 16)
	require.Len(t, data, 8)
	require.Equal(t, admin, keys(adminOperations), "QueueAdminClient")
	require.Equal(t, data, keys(dataOperations), "QueueClient")
	identityOps := sdkOperations(identity.IdentityClient{})
	for _, op := range keys(identityOperations) {
		require.Contains(t, identityOps, op, "IdentityClient")
	}
	require.Len(t, identityOperations, 5)
	require.Equal(t, "65.130.0", common.Version(), "docs/oci-compatibility.md names the SDK version it was checked with")
}
