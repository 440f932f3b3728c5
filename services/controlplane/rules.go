package controlplane

import (
	"slices"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/persistence"
)

// The control plane's rules for changing a resource: the caller's if-match etag and the lifecycle states a change
// needs. Each returns a persistence.Check, which the store runs on the row it holds locked, so that the rule and
// the change see the same version of the resource.

// checkEtag refuses a change when ifMatch is set (and not "*") and differs from the resource's current etag.
func checkEtag(ifMatch, current string) error {
	if ifMatch != "" && ifMatch != "*" && ifMatch != current {
		return fault.PreconditionFailed("if-match: the resource has changed (current etag %s)", current)
	}
	return nil
}

// compartmentUpdatable: the etag matches, the compartment is ACTIVE, and the root compartment, which carries the
// tenancy's name (DESIGN section 3), keeps it (only its description and tags change).
func compartmentUpdatable(ifMatch string, patch persistence.CompartmentPatch) persistence.Check[persistence.Compartment] {
	return func(cur persistence.Compartment) error {
		if err := checkEtag(ifMatch, cur.Etag()); err != nil {
			return err
		}
		if cur.LifecycleState != persistence.StateActive {
			return fault.IncorrectState("compartment %s is %s", cur.ID, cur.LifecycleState)
		}
		if cur.ParentID == nil && patch.Name != nil && *patch.Name != cur.Name {
			return fault.IncorrectState("name: the root compartment of a tenancy cannot be renamed")
		}
		return nil
	}
}

// compartmentDeletable: the etag matches, and the compartment is not the root and not deleted already (the store
// then checks that it is empty).
func compartmentDeletable(ifMatch string) persistence.Check[persistence.Compartment] {
	return func(cur persistence.Compartment) error {
		if err := checkEtag(ifMatch, cur.Etag()); err != nil {
			return err
		}
		if cur.ParentID == nil {
			return fault.IncorrectState("the root compartment of a tenancy cannot be deleted")
		}
		if cur.LifecycleState == persistence.StateDeleted {
			return fault.NotFound("compartment %s does not exist or you are not authorized to access it", cur.ID)
		}
		return nil
	}
}

// queueIn: the queue exists (a DELETED queue is as missing as one that never was), the etag matches, and the
// queue is in one of states.
func queueIn(ifMatch string, states ...string) persistence.Check[persistence.Queue] {
	return func(cur persistence.Queue) error {
		if cur.LifecycleState == persistence.StateDeleted {
			return fault.ErrNotFound
		}
		if err := checkEtag(ifMatch, cur.Etag()); err != nil {
			return err
		}
		if !slices.Contains(states, cur.LifecycleState) {
			return fault.IncorrectState("queue %s is %s", cur.ID, cur.LifecycleState)
		}
		return nil
	}
}

// groupChangeable: the etag matches and the group's queue is ACTIVE; the primary group cannot be deleted (it can be
// disabled).
func groupChangeable(ifMatch string, deleting bool) persistence.Check[persistence.GroupInQueue] {
	return func(cur persistence.GroupInQueue) error {
		if err := checkEtag(ifMatch, cur.Etag()); err != nil {
			return err
		}
		if cur.QueueState != persistence.StateActive {
			return fault.IncorrectState("queue %s is %s", cur.QueueID, cur.QueueState)
		}
		if deleting && cur.IsPrimary() {
			return fault.IncorrectState("the primary consumer group cannot be deleted; disable it instead")
		}
		return nil
	}
}

// policyChangeable: the policy is not deleted and the etag matches.
func policyChangeable(ifMatch string) persistence.Check[persistence.Policy] {
	return func(cur persistence.Policy) error {
		if cur.LifecycleState == persistence.StateDeleted {
			return fault.ErrNotFound
		}
		return checkEtag(ifMatch, cur.Etag())
	}
}
