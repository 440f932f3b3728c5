package iam

import (
	"context"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/iam/authz"
	"github.com/ferry-mq/ferry/iam/policy"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/tenancy"
)

// Target is what a request touches, for the decision's input.
type Target struct {
	CompartmentID   string
	QueueID         string
	QueueName       string
	ConsumerGroupID string
}

// Request is what a call names, as its transport read it: the operation and the ids the operation's target kind
// needs (Operations), wherever the request carries them (path, query or body).
type Request struct {
	Operation string // the operationId
	// CompartmentID: of TargetCompartmentPath, TargetCompartmentQuery and TargetCompartmentBody ("" in a list's
	// query: the compartment of QueueID or WorkRequestID, else the tenancy's root).
	CompartmentID string
	// InSubtree: a list over CompartmentID and the compartments below it (compartmentIdInSubtree=true).
	InSubtree bool
	// QueueID: of TargetQueuePath, TargetQueueQuery and TargetQueueBody; in a list's query, the queue it names.
	QueueID string
	// ConsumerGroupRef is a data-plane call's consumerGroupId (an OCID or a displayName), with TargetQueuePath.
	ConsumerGroupRef string
	// ConsumerGroupID, WorkRequestID, PolicyID: of the target kinds of the same names (WorkRequestID also in a
	// list's query).
	ConsumerGroupID string
	WorkRequestID   string
	PolicyID        string
	// DestinationCompartmentID is the body's compartmentId of an operation with AlsoBodyCompartment (a move).
	DestinationCompartmentID string
}

// Authorize decides a request of the caller p: it finds the target's compartment (and queue, consumer group),
// and asks the engine whether p holds the operation's permission there. A denial is a NotFound fault naming the
// field, exactly like a missing resource. The returned context carries the decision's Access and operation for
// CanInspect (lists show only what the caller may see).
func (a *Access) Authorize(ctx context.Context, p *Principal, req Request) (context.Context, error) {
	op, ok := Operations[req.Operation]
	if !ok {
		// Every route has an entry (TestOperationsCoverEveryRoute): this is a bug, not the caller's fault.
		return ctx, errUnmapped(req.Operation)
	}
	if op.Target == TargetAuthenticated {
		return ctx, nil
	}
	start := time.Now()
	target, err := a.target(ctx, p.TenancyID, op.Target, req)
	if err == nil && op.Permission == policy.PermQueuePull && target.ConsumerGroupID == "" {
		target.ConsumerGroupID = target.QueueID // no consumerGroupId: the primary group, whose OCID is the queue's
	}
	if err == nil {
		err = a.require(ctx, p, op.Permission, req.Operation, target, fieldOf[op.Target])
	}
	if fault.Is(err, fault.KindNotFound) && op.Target == TargetCompartmentQuery && req.InSubtree {
		// A subtree list answers what the caller may see below compartmentId, so it needs the permission
		// somewhere in the subtree, not in compartmentId itself; the handler drops what it may not see.
		if ok, serr := a.allowedBelow(ctx, p, op.Permission, req.Operation, target.CompartmentID); serr != nil {
			err = serr
		} else if ok {
			err = nil
		}
	}
	if err == nil && op.AlsoBodyCompartment {
		err = a.require(ctx, p, op.Permission, req.Operation, Target{CompartmentID: req.DestinationCompartmentID}, "compartmentId")
	}
	a.Metrics.record(ctx, start, op.Permission, err)
	if err != nil {
		return ctx, err
	}
	return withAccess(ctx, a, req.Operation), nil
}

type errUnmapped string

func (e errUnmapped) Error() string {
	return "iam: operation " + string(e) + " has no permission mapping"
}

// Decide authorizes permission on target for the caller p (operation names the API operation for conditions).
func (a *Access) Decide(ctx context.Context, p *Principal, permission, operation string, t Target) (authz.Decision, error) {
	st, err := a.state(ctx, p.TenancyID)
	if err != nil {
		return authz.Decision{}, err
	}
	path, name, ok := st.tree.Load().Ancestry(t.CompartmentID)
	if !ok {
		// The compartment may be new on another node: reload once before answering "not found".
		a.Invalidate(p.TenancyID)
		if st, err = a.state(ctx, p.TenancyID); err != nil {
			return authz.Decision{}, err
		}
		if path, name, ok = st.tree.Load().Ancestry(t.CompartmentID); !ok {
			return authz.Decision{}, nil
		}
	}
	return a.engine.Decide(ctx, authz.Input{
		TenancyID: p.TenancyID, Principal: p.Subject, Groups: p.Groups, Permission: permission, Operation: operation,
		CompartmentPath: path, CompartmentName: name, QueueID: t.QueueID, QueueName: t.QueueName, ConsumerGroupID: t.ConsumerGroupID,
	})
}

// Allowed reports whether the caller in ctx holds permission in the compartment (list filtering). The operation
// being served (for request.operation conditions) is the one Authorize put in ctx.
func (a *Access) Allowed(ctx context.Context, permission, compartmentID string) bool {
	p := PrincipalFrom(ctx)
	if p == nil {
		return false
	}
	operation, _ := ctx.Value(operationKey{}).(string)
	d, err := a.Decide(ctx, p, permission, operation, Target{CompartmentID: compartmentID})
	return err == nil && d.Allowed
}

// allowedBelow reports whether the caller holds permission in some live compartment strictly below compartmentID.
func (a *Access) allowedBelow(ctx context.Context, p *Principal, permission, operation, compartmentID string) (bool, error) {
	st, err := a.state(ctx, p.TenancyID)
	if err != nil {
		return false, err
	}
	for _, id := range st.tree.Load().Below(compartmentID) {
		d, err := a.Decide(ctx, p, permission, operation, Target{CompartmentID: id})
		if err != nil {
			return false, err
		}
		if d.Allowed {
			return true, nil
		}
	}
	return false, nil
}

// fieldOf names the request field that holds each kind of target, for the 404's message.
var fieldOf = map[TargetKind]string{
	TargetTenancy: "tenancy", TargetCompartmentPath: "compartmentId", TargetCompartmentQuery: "compartmentId",
	TargetCompartmentBody: "compartmentId", TargetQueuePath: "queueId", TargetQueueQuery: "queueId",
	TargetQueueBody: "queueId", TargetConsumerGroupPath: "consumerGroupId", TargetWorkRequestPath: "workRequestId",
	TargetPolicyPath: "policyId", TargetCompartmentDeletionPath: "workRequestId",
}

// require answers a denial exactly like a missing resource: NotFound naming the field.
func (a *Access) require(ctx context.Context, p *Principal, permission, operation string, t Target, field string) error {
	d, err := a.Decide(ctx, p, permission, operation, t)
	if err != nil {
		return err
	}
	if !d.Allowed {
		return denial{fault.NotFound("%s: the resource does not exist or you are not authorized to access it", field)}
	}
	return nil
}

// target finds the compartment (and queue, consumer group) a request addresses.
func (a *Access) target(ctx context.Context, tenancyID string, kind TargetKind, req Request) (Target, error) {
	switch kind {
	case TargetTenancy:
		return Target{CompartmentID: tenancyID}, nil
	case TargetCompartmentQuery:
		switch {
		case req.CompartmentID != "":
			return Target{CompartmentID: req.CompartmentID}, nil
		case req.QueueID != "": // a list of one queue, wherever it is
			t, err := a.queueTarget(ctx, tenancyID, req.QueueID)
			return Target{CompartmentID: t.CompartmentID}, err
		case req.WorkRequestID != "": // a list of one work request, wherever it is
			w, err := a.store.WorkRequests.Get(ctx, tenancyID, req.WorkRequestID)
			return Target{CompartmentID: w.CompartmentID}, fault.NotFoundIn("workRequestId", err)
		}
		return Target{CompartmentID: tenancyID}, nil
	case TargetCompartmentPath, TargetCompartmentBody:
		return Target{CompartmentID: req.CompartmentID}, nil
	case TargetQueuePath:
		t, err := a.queueTarget(ctx, tenancyID, req.QueueID)
		if err != nil {
			return t, err
		}
		t.ConsumerGroupID, err = a.consumerGroupID(ctx, tenancyID, t.QueueID, req.ConsumerGroupRef)
		return t, err
	case TargetQueueQuery, TargetQueueBody:
		return a.queueTarget(ctx, tenancyID, req.QueueID)
	case TargetConsumerGroupPath:
		g, err := a.store.ConsumerGroups.Get(ctx, tenancyID, req.ConsumerGroupID)
		if err != nil {
			return Target{}, fault.NotFoundIn("consumerGroupId", err)
		}
		t, err := a.queueTarget(ctx, tenancyID, g.QueueID)
		t.ConsumerGroupID = g.ID
		return t, err
	case TargetWorkRequestPath:
		w, err := a.store.WorkRequests.Get(ctx, tenancyID, req.WorkRequestID)
		return Target{CompartmentID: w.CompartmentID, QueueID: w.ResourceID}, fault.NotFoundIn("workRequestId", err)
	case TargetPolicyPath:
		pol, err := a.store.Policies.Get(ctx, tenancyID, req.PolicyID)
		return Target{CompartmentID: pol.CompartmentID}, fault.NotFoundIn("policyId", err)
	case TargetCompartmentDeletionPath:
		// An id that records no deletion names no compartment, which the decision then finds nowhere: 404.
		id, _ := tenancy.DeletedCompartment(req.WorkRequestID)
		return Target{CompartmentID: id}, nil
	}
	return Target{}, fault.ErrNotFound
}

// queueTarget finds a queue's compartment and name (cached per tenancy until its next reload; a move or rename
// invalidates the tenancy).
func (a *Access) queueTarget(ctx context.Context, tenancyID, queueID string) (Target, error) {
	st, err := a.state(ctx, tenancyID)
	if err != nil {
		return Target{}, err
	}
	st.qmu.Lock()
	ref, ok := st.queues[queueID]
	gen := st.queuesGen
	st.qmu.Unlock()
	if !ok {
		q, err := a.store.Queues.Get(ctx, tenancyID, queueID)
		if err != nil {
			return Target{}, fault.NotFoundIn("queueId", err)
		}
		ref = queueRef{compartmentID: q.CompartmentID, name: q.DisplayName}
		st.qmu.Lock()
		if st.queuesGen == gen && len(st.queues) < 100000 {
			st.queues[queueID] = ref
		}
		st.qmu.Unlock()
	}
	return Target{CompartmentID: ref.compartmentID, QueueID: queueID, QueueName: ref.name}, nil
}

// consumerGroupID is the OCID of the consumer group that ref (a data-plane call's consumerGroupId: an OCID or a
// displayName, case-insensitive) names on the queue, resolved the way the data plane resolves it, so that a
// target.consumergroup.id condition cannot be sidestepped by naming the group differently. The primary group's
// OCID is the queue's. A ref that names no group is returned as is (the call then answers 404 anyway).
func (a *Access) consumerGroupID(ctx context.Context, tenancyID, queueID, ref string) (string, error) {
	if ref == "" || ref == queueID {
		return ref, nil
	}
	if a.ResolveGroup != nil {
		if id, ok := a.ResolveGroup(ctx, tenancyID, queueID, ref); ok {
			return id, nil
		}
		return ref, nil
	}
	groups, err := a.store.ConsumerGroups.OfQueue(ctx, queueID)
	if err != nil {
		return "", err
	}
	for _, g := range groups {
		if g.ID == ref || strings.EqualFold(g.DisplayName, ref) {
			return g.ID, nil
		}
	}
	if strings.EqualFold(ref, persistence.PrimaryGroupName) {
		return queueID, nil // a queue without the CONSUMER_GROUPS capability: its one group, by its name
	}
	return ref, nil
}

type (
	accessKey    struct{}
	operationKey struct{}
)

// withAccess records the Access and the operation being served for CanInspect.
func withAccess(ctx context.Context, a *Access, operation string) context.Context {
	return context.WithValue(context.WithValue(ctx, accessKey{}, a), operationKey{}, operation)
}

// CanInspect reports whether the caller of ctx holds permission in compartmentID; handlers of lists use it to
// return only what the caller may see. Without an Access in ctx (no IAM) everything is visible.
func CanInspect(ctx context.Context, permission, compartmentID string) bool {
	a, _ := ctx.Value(accessKey{}).(*Access)
	if a == nil {
		return true
	}
	return a.Allowed(ctx, permission, compartmentID)
}
