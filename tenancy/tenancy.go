// Package tenancy owns what a tenant is: tenancies (each created with its root compartment and its Tenant Admin
// Policy), the tree of compartments that every IAM decision walks, and the OCIDs of all resources.
package tenancy

import (
	"context"

	"github.com/ferry-mq/ferry/persistence"
)

// The Tenant Admin Policy every tenancy starts with (DESIGN section 5): visible and editable like any other.
const (
	AdminPolicyName        = "Tenant Admin Policy"
	AdminPolicyDescription = "Administrators manage everything in the tenancy."
	AdminPolicyStatement   = "Allow group Administrators to manage all-resources in tenancy"
)

// rootDescription describes every root compartment; the root carries the tenancy's OCID and name.
const rootDescription = "root compartment of the tenancy"

// Create creates a tenancy named name with its root compartment and Tenant Admin Policy, or returns the existing
// tenancy of that name (created is false then).
func Create(ctx context.Context, tenancies *persistence.Tenancies, ocids OCIDs, name string) (t persistence.Tenancy, created bool, err error) {
	id := ocids.New(TypeTenancy)
	admin := persistence.Policy{
		TenancyID: id, ID: ocids.New(TypePolicy), CompartmentID: id, Name: AdminPolicyName,
		Description: AdminPolicyDescription, Statements: []string{AdminPolicyStatement},
	}
	return tenancies.Create(ctx, id, name, rootDescription, []persistence.Policy{admin})
}
