package tenancy

import "strings"

// OCI Identity's DeleteCompartment answers 202 with a work request id, which its SDKs then follow with
// GetWorkRequest. ferry deletes a compartment before it answers, and the compartment's row stays (DELETED), so the
// row is the work request's whole record: its id is derived from the compartment's OCID, and needs no table of
// its own.

// CompartmentDeletionWorkRequest is the OCID of the identity work request that records the deletion of the
// compartment compartmentID: the compartment's OCID with the work request type.
func CompartmentDeletionWorkRequest(compartmentID string) string {
	return "ocid1." + TypeWorkRequest + strings.TrimPrefix(compartmentID, "ocid1."+TypeCompartment)
}

// DeletedCompartment is the compartment whose deletion the identity work request workRequestID records; ok is
// false when workRequestID is not a well-formed work request OCID.
func DeletedCompartment(workRequestID string) (compartmentID string, ok bool) {
	if !IsOCID(workRequestID, TypeWorkRequest) {
		return "", false
	}
	return "ocid1." + TypeCompartment + strings.TrimPrefix(workRequestID, "ocid1."+TypeWorkRequest), true
}
