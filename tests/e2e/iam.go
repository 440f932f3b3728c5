package e2e

import (
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Tree is the compartment tree of the IAM scenarios: root → A → B and root → C, with a queue in each and one in
// the root.
type Tree struct {
	A, B, C        string // compartment OCIDs
	QA, QB, QC, QR string // queues in A, B, C and the root
}

// NewTree creates the Tree under rootID (the tenancy's root compartment).
func (c *Client) NewTree(t testing.TB, rootID string) Tree {
	t.Helper()
	var tr Tree
	tr.A = c.NewCompartment(t, rootID, "A").Id
	tr.B = c.NewCompartment(t, tr.A, "B").Id
	tr.C = c.NewCompartment(t, rootID, "C").Id
	tr.QA = c.NewNamedQueue(t, tr.A, "qa").Id
	tr.QB = c.NewNamedQueue(t, tr.B, "qb").Id
	tr.QC = c.NewNamedQueue(t, tr.C, "qc").Id
	tr.QR = c.NewNamedQueue(t, rootID, "qr").Id
	return tr
}

// RequireQueueAccess checks which of the queues c may read: allowed ones answer 200, the others are denied (404).
func (c *Client) RequireQueueAccess(t testing.TB, allowed []string, all ...string) {
	t.Helper()
	for _, q := range all {
		status, body := c.TryGetQueue(t, q)
		if slices.Contains(allowed, q) {
			require.Equal(t, http.StatusOK, status, "queue %s: %s", q, body)
		} else {
			RequireDenied(t, status, body, "queue %s", q)
		}
	}
}
