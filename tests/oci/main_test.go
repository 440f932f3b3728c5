// Package oci is ferry's compatibility suite with OCI's own Go SDK (github.com/oracle/oci-go-sdk/v65, the version
// go.mod pins): every operation of queue.QueueAdminClient and queue.QueueClient, and identity.IdentityClient's
// compartment operations, against a real ferry server (tests/testserver). The SDK is used as OCI's users use it:
// its own clients, request and response types, retry policies and error parsing; only each client's endpoint
// (Host) and its request signer (a bearer token instead of OCI's HTTP signatures) are replaced.
//
// The SDK's types are the target: a field ferry names differently, a status code the SDK does not expect or a
// header it does not find makes an operation fail here. docs/oci-compatibility.md lists the operations and
// which of them pass.
package oci

import (
	"testing"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }
