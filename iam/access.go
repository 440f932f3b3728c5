package iam

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/iam/authz"
	"github.com/ferry-mq/ferry/iam/policy"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
)

// tenancyReload bounds how long a tenancy's loaded policies and compartment tree are trusted without a change
// notification (the notifications make changes take effect at once; this is the safety net).
const tenancyReload = 30 * time.Second

// Access decides every request of both planes with the embedded OPA engine: it maps the route to its operation
// (Operations), finds the target's compartment, and asks authz for a decision over the caller's tenancy's
// policies. A denial answers 404 NotAuthorizedOrNotFound, exactly like a missing resource.
type Access struct {
	// ResolveGroup, when set, resolves a data-plane consumerGroupId (OCID or displayName) to the group's OCID from
	// the data plane's own cache of the queue's groups (ok false: no such group), so that a pull naming a group
	// costs no extra query. Without it the groups are read from the database.
	ResolveGroup func(ctx context.Context, tenancyID, queueID, ref string) (id string, ok bool)

	engine *authz.Engine
	store  *persistence.Store
	logger *slog.Logger

	mu        sync.Mutex
	tenancies map[string]*tenancyState
}

// tenancyState is what Access holds per tenancy: the compartment tree (ids → parent and name) and when the
// tenancy's statements were last loaded into the engine.
type tenancyState struct {
	mu     sync.Mutex
	loaded time.Time
	stale  bool
	// tree is the compartment tree of the last load: replaced, never changed, so that decisions read it without
	// the lock while a reload builds the next one.
	tree   atomic.Pointer[compartmentTree]
	queues map[string]queueRef // queue id → compartment and name (cleared with the tenancy)
	// queuesGen counts the clears of queues: a lookup that started before a clear must not store what it read
	// (the queue may have moved or been renamed since).
	queuesGen uint64
	qmu       sync.Mutex
}

// compartmentTree is a tenancy's compartments (ids → parent and name) as one load read them.
type compartmentTree struct {
	nodes   map[string]persistence.CompartmentNode
	resolve authz.Resolver // compartment paths (names from the root) → ids, over nodes
}

type queueRef struct {
	compartmentID string
	name          string
}

// NewAccess prepares the engine.
func NewAccess(ctx context.Context, store *persistence.Store, logger *slog.Logger) (*Access, error) {
	engine, err := authz.New(ctx)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Access{engine: engine, store: store, logger: logger, tenancies: map[string]*tenancyState{}}, nil
}

// Invalidate marks a tenancy's policies and compartments as changed (a NOTIFY from any node, or a change here).
func (a *Access) Invalidate(tenancyID string) {
	a.mu.Lock()
	st := a.tenancies[tenancyID]
	a.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		st.stale = true
		st.mu.Unlock()
	}
}

// InvalidateAll marks every tenancy as changed (the LISTEN connection was lost for a while).
func (a *Access) InvalidateAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range a.tenancies {
		st.mu.Lock()
		st.stale = true
		st.mu.Unlock()
	}
}

// state returns the tenancy's state, loading policies and the tree into the engine when missing or stale.
func (a *Access) state(ctx context.Context, tenancyID string) (*tenancyState, error) {
	a.mu.Lock()
	st := a.tenancies[tenancyID]
	if st == nil {
		st = &tenancyState{stale: true}
		a.tenancies[tenancyID] = st
	}
	a.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.stale && time.Since(st.loaded) < tenancyReload {
		return st, nil
	}
	nodes, err := a.store.Compartments.Tree(ctx, tenancyID)
	if err != nil {
		return nil, err
	}
	rows, err := a.store.Policies.OfTenancy(ctx, tenancyID)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]persistence.CompartmentNode, len(nodes))
	for _, n := range nodes {
		byID[n.ID] = n
	}
	tree := &compartmentTree{nodes: byID, resolve: resolver(tenancyID, byID)}
	policies := make([]authz.Policy, 0, len(rows))
	for _, p := range rows {
		statements, err := policy.ParseStatements(p.Statements)
		if err != nil {
			a.logger.Warn("skipping a stored policy that no longer parses", "policy", p.ID, "error", err)
			continue
		}
		// A statement grants only inside its policy's compartment. Statements are checked when written, but a
		// path can come to resolve elsewhere when compartments are renamed: check again with today's tree.
		statements = slices.DeleteFunc(statements, func(s policy.Statement) bool {
			return !tree.inScope(tenancyID, p.CompartmentID, s.Location)
		})
		policies = append(policies, authz.Policy{ID: p.ID, Statements: statements})
	}
	compiled, err := authz.Load(tenancyID, policies, tree.resolve)
	if err != nil {
		return nil, err
	}
	if err := a.engine.SetTenancy(ctx, compiled); err != nil {
		return nil, err
	}
	st.tree.Store(tree)
	st.loaded, st.stale = time.Now(), false
	st.qmu.Lock()
	st.queues = map[string]queueRef{}
	st.queuesGen++
	st.qmu.Unlock()
	return st, nil
}

// inScope reports whether a statement of a policy attached to compartment home applies at location l once
// resolved: a policy grants only in its compartment and the compartments below it, so that `manage policies` in a
// compartment gives no more than that compartment (OCI's rule). A path that does not resolve grants nothing anyway
// and is kept (it is checked again when it resolves).
func (st *compartmentTree) inScope(tenancyID, home string, l policy.Location) bool {
	if home == tenancyID {
		return true
	}
	var id string
	switch {
	case l.Tenancy:
		id = tenancyID
	case l.ID != "":
		id = l.ID
	default:
		var ok bool
		if id, ok = st.resolve(slices.Clone(l.Path)); !ok {
			return true
		}
	}
	path, _, ok := st.ancestry(tenancyID, id)
	return ok && slices.Contains(path, home)
}

// CheckScope refuses statements that reach outside the compartment home their policy is attached to (400 naming
// the statement). A path is checked by its names, so that a path below home is accepted before it exists.
func (a *Access) CheckScope(ctx context.Context, tenancyID, home string, statements []policy.Statement) error {
	if home == tenancyID {
		return nil
	}
	st, err := a.state(ctx, tenancyID)
	if err != nil {
		return err
	}
	tree := st.tree.Load()
	homePath, homeName, ok := tree.ancestry(tenancyID, home)
	if !ok {
		return nil // not a compartment of the tenancy: the store answers 404
	}
	var homeNames []string
	for _, id := range homePath[1:] {
		homeNames = append(homeNames, tree.nodes[id].Name)
	}
	for i, s := range statements {
		var in bool
		switch l := s.Location; {
		case l.Tenancy:
		case l.ID != "":
			path, _, found := tree.ancestry(tenancyID, l.ID)
			in = found && slices.Contains(path, home)
		default:
			in = len(l.Path) >= len(homeNames) && slices.Equal(l.Path[:len(homeNames)], homeNames)
		}
		if !in {
			return apierror.InvalidParameter("statements[%d]: the location is outside compartment %s (%s), which the "+
				"policy is attached to: a policy grants only in its compartment and the compartments below it",
				i, strings.Join(homeNames, ":"), homeName)
		}
	}
	return nil
}

// resolver maps a compartment path from the root (names) to an id over the tenancy's live compartments.
func resolver(tenancyID string, nodes map[string]persistence.CompartmentNode) authz.Resolver {
	children := map[string]map[string]string{} // parent → name → id
	for _, n := range nodes {
		if n.ParentID == nil || n.State == persistence.StateDeleted {
			continue
		}
		if children[*n.ParentID] == nil {
			children[*n.ParentID] = map[string]string{}
		}
		children[*n.ParentID][n.Name] = n.ID
	}
	return func(path []string) (string, bool) {
		cur := tenancyID
		for _, name := range path {
			next, ok := children[cur][name]
			if !ok {
				return "", false
			}
			cur = next
		}
		return cur, true
	}
}

// ancestry is the path of compartment ids from the root down to id, and id's name; ok is false when id is not a
// compartment of the tenancy.
func (st *compartmentTree) ancestry(tenancyID, id string) (path []string, name string, ok bool) {
	n, found := st.nodes[id]
	if !found {
		return nil, "", false
	}
	name = n.Name
	for depth := 0; depth < 1000; depth++ {
		path = append(path, n.ID)
		if n.ParentID == nil {
			break
		}
		if n, found = st.nodes[*n.ParentID]; !found {
			return nil, "", false
		}
	}
	if path[len(path)-1] != tenancyID {
		return nil, "", false
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path, name, true
}

// Target is what a request touches, for the decision's input.
type Target struct {
	CompartmentID   string
	QueueID         string
	QueueName       string
	ConsumerGroupID string
}

// Decide authorizes permission on target for the caller p (operation names the API operation for conditions).
func (a *Access) Decide(ctx context.Context, p *Principal, permission, operation string, t Target) (authz.Decision, error) {
	st, err := a.state(ctx, p.TenancyID)
	if err != nil {
		return authz.Decision{}, err
	}
	path, name, ok := st.tree.Load().ancestry(p.TenancyID, t.CompartmentID)
	if !ok {
		// The compartment may be new on another node: reload once before answering "not found".
		a.Invalidate(p.TenancyID)
		if st, err = a.state(ctx, p.TenancyID); err != nil {
			return authz.Decision{}, err
		}
		if path, name, ok = st.tree.Load().ancestry(p.TenancyID, t.CompartmentID); !ok {
			return authz.Decision{}, nil
		}
	}
	return a.engine.Decide(ctx, authz.Input{
		TenancyID: p.TenancyID, Principal: p.Subject, Groups: p.Groups, Permission: permission, Operation: operation,
		CompartmentPath: path, CompartmentName: name, QueueID: t.QueueID, QueueName: t.QueueName, ConsumerGroupID: t.ConsumerGroupID,
	})
}

// Allowed reports whether the caller in ctx holds permission in the compartment (list filtering). The operation
// being served (for request.operation conditions) is the one the middleware put in ctx.
func (a *Access) Allowed(ctx context.Context, permission, compartmentID string) bool {
	p := PrincipalFrom(ctx)
	if p == nil {
		return false
	}
	operation, _ := ctx.Value(operationKey{}).(string)
	d, err := a.Decide(ctx, p, permission, operation, Target{CompartmentID: compartmentID})
	return err == nil && d.Allowed
}

// Middleware authorizes every authenticated request. operationOf maps a route ("METHOD /path") to its operationId.
func (a *Access) Middleware(operationOf func(method, route string) string) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := PrincipalFrom(c.Request.Context())
		route := c.FullPath()
		if p == nil || route == "" {
			c.Next() // public operations and unknown routes
			return
		}
		name := operationOf(c.Request.Method, route)
		op, ok := Operations[name]
		if !ok {
			apierror.Write(c, fmt.Errorf("iam: operation %q (%s %s) has no permission mapping", name, c.Request.Method, route))
			return
		}
		if op.Target == TargetAuthenticated {
			c.Next()
			return
		}
		ctx := c.Request.Context()
		target, err := a.target(c, p.TenancyID, op.Target)
		if err == nil && op.Permission == policy.PermQueuePull && target.ConsumerGroupID == "" {
			target.ConsumerGroupID = target.QueueID // no consumerGroupId: the primary group, whose OCID is the queue's
		}
		if err == nil {
			err = a.require(ctx, p, op.Permission, name, target, fieldOf[op.Target])
		}
		if err != nil && apierror.From(err).Status == http.StatusNotFound && op.Target == TargetCompartmentQuery &&
			c.Query("compartmentIdInSubtree") == "true" {
			// A subtree list answers what the caller may see below compartmentId, so it needs the permission
			// somewhere in the subtree, not in compartmentId itself; the handler drops what it may not see.
			if ok, serr := a.allowedBelow(ctx, p, op.Permission, name, target.CompartmentID); serr != nil {
				err = serr
			} else if ok {
				err = nil
			}
		}
		if err == nil && op.AlsoBodyCompartment {
			var dest Target
			if dest, err = a.target(c, p.TenancyID, TargetCompartmentBody); err == nil {
				err = a.require(ctx, p, op.Permission, name, dest, "compartmentId")
			}
		}
		if err != nil {
			apierror.Write(c, err)
			return
		}
		c.Request = c.Request.WithContext(withAccess(ctx, a, name))
		c.Next()
	}
}

// allowedBelow reports whether the caller holds permission in some live compartment strictly below compartmentID.
func (a *Access) allowedBelow(ctx context.Context, p *Principal, permission, operation, compartmentID string) (bool, error) {
	st, err := a.state(ctx, p.TenancyID)
	if err != nil {
		return false, err
	}
	tree := st.tree.Load()
	if _, _, ok := tree.ancestry(p.TenancyID, compartmentID); !ok {
		return false, nil
	}
	for id, n := range tree.nodes {
		if id == compartmentID || n.State == persistence.StateDeleted {
			continue
		}
		if path, _, ok := tree.ancestry(p.TenancyID, id); !ok || !slices.Contains(path, compartmentID) {
			continue
		}
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
	TargetPolicyPath: "policyId",
}

// require answers a denial exactly like a missing resource: 404 NotAuthorizedOrNotFound naming the field.
func (a *Access) require(ctx context.Context, p *Principal, permission, operation string, t Target, field string) error {
	d, err := a.Decide(ctx, p, permission, operation, t)
	if err != nil {
		return err
	}
	if !d.Allowed {
		return apierror.NotFound("%s: the resource does not exist or you are not authorized to access it", field)
	}
	return nil
}

var errNoTarget = apierror.NotFound("the resource does not exist or you are not authorized to access it")

// target finds the compartment (and queue, consumer group) a request addresses.
func (a *Access) target(c *gin.Context, tenancyID string, kind TargetKind) (Target, error) {
	ctx := c.Request.Context()
	switch kind {
	case TargetTenancy:
		return Target{CompartmentID: tenancyID}, nil
	case TargetCompartmentPath:
		return Target{CompartmentID: c.Param("compartmentId")}, nil
	case TargetCompartmentQuery:
		return Target{CompartmentID: c.Query("compartmentId")}, nil
	case TargetCompartmentBody:
		body, err := peekBody(c)
		return Target{CompartmentID: body.CompartmentID}, err
	case TargetQueuePath:
		t, err := a.queueTarget(ctx, tenancyID, c.Param("queueId"))
		if err != nil {
			return t, err
		}
		t.ConsumerGroupID, err = a.consumerGroupID(ctx, tenancyID, t.QueueID, c.Query("consumerGroupId"))
		return t, err
	case TargetQueueQuery:
		return a.queueTarget(ctx, tenancyID, c.Query("queueId"))
	case TargetQueueBody:
		body, err := peekBody(c)
		if err != nil {
			return Target{}, err
		}
		return a.queueTarget(ctx, tenancyID, body.QueueID)
	case TargetConsumerGroupPath:
		g, err := a.store.ConsumerGroups.Get(ctx, tenancyID, c.Param("consumerGroupId"))
		if err != nil {
			return Target{}, notFound("consumerGroupId", err)
		}
		t, err := a.queueTarget(ctx, tenancyID, g.QueueID)
		t.ConsumerGroupID = g.ID
		return t, err
	case TargetWorkRequestPath:
		w, err := a.store.WorkRequests.Get(ctx, tenancyID, c.Param("workRequestId"))
		return Target{CompartmentID: w.CompartmentID, QueueID: w.ResourceID}, notFound("workRequestId", err)
	case TargetPolicyPath:
		pol, err := a.store.Policies.Get(ctx, tenancyID, c.Param("policyId"))
		return Target{CompartmentID: pol.CompartmentID}, notFound("policyId", err)
	}
	return Target{}, errNoTarget
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
			return Target{}, notFound("queueId", err)
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
	if ref == "" || ref == queueID || strings.EqualFold(ref, persistence.PrimaryGroupName) {
		if ref == "" {
			return "", nil
		}
		return queueID, nil
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
	return ref, nil
}

// notFound names the field of a target that does not exist.
func notFound(field string, err error) error {
	if errors.Is(err, apierror.ErrNotFound) {
		return apierror.NotFound("%s: the resource does not exist or you are not authorized to access it", field)
	}
	return err
}

type targetBody struct {
	CompartmentID string `json:"compartmentId"`
	QueueID       string `json:"queueId"`
}

// peekBody reads the (already validated) JSON body's target fields and puts the body back for the handler.
func peekBody(c *gin.Context) (targetBody, error) {
	var t targetBody
	if c.Request.Body == nil {
		return t, errNoTarget
	}
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return t, apierror.InvalidParameter("body: %v", err)
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(raw))
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, apierror.InvalidParameter("body: the request body is not valid JSON")
	}
	return t, nil
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

// Simulate is the policy simulator: the decision for a hypothetical caller of the tenancy.
func (a *Access) Simulate(ctx context.Context, tenancyID, subject string, groups []string, permission string, t Target) (authz.Decision, error) {
	if t.ConsumerGroupID != "" && t.QueueID == "" {
		// A group alone: its queue (the primary group's OCID is the queue's own).
		if strings.HasPrefix(t.ConsumerGroupID, "ocid1.queue.") {
			t.QueueID = t.ConsumerGroupID
		} else {
			g, err := a.store.ConsumerGroups.Get(ctx, tenancyID, t.ConsumerGroupID)
			if err != nil {
				return authz.Decision{}, notFound("consumerGroupId", err)
			}
			t.QueueID = g.QueueID
		}
	}
	if permission == policy.PermQueuePull && t.QueueID != "" && t.ConsumerGroupID == "" {
		t.ConsumerGroupID = t.QueueID // as for a real pull without consumerGroupId: the primary group
	}
	if t.QueueID != "" && t.CompartmentID == "" {
		qt, err := a.queueTarget(ctx, tenancyID, t.QueueID)
		if err != nil {
			return authz.Decision{}, err
		}
		t.CompartmentID, t.QueueName = qt.CompartmentID, qt.QueueName
	}
	if t.CompartmentID == "" {
		t.CompartmentID = tenancyID
	}
	d, err := a.Decide(ctx, &Principal{Subject: subject, TenancyID: tenancyID, Groups: groups}, permission, "", t)
	if errors.Is(err, authz.ErrInvalidInput) {
		return d, apierror.InvalidParameter("permission: %v", err)
	}
	return d, err
}

// Changed makes every node reload the tenancy's decisions, for a change whose own transaction sends no
// notification (a queue rename: target.queue.name). This node forgets at once; a failed notification leaves other
// nodes stale until their periodic reload, which is logged rather than failing a change that is already committed.
func (a *Access) Changed(ctx context.Context, tenancyID string) {
	a.Invalidate(tenancyID)
	if err := a.store.Policies.NotifyChanged(ctx, tenancyID); err != nil {
		a.logger.Warn("iam: notifying other nodes of a change", "tenancy", tenancyID, "error", err)
	}
}

// OnConfigNotify handles a ferry_config notification payload.
func (a *Access) OnConfigNotify(payload string) {
	if tenancyID, ok := strings.CutPrefix(payload, persistence.PolicyChannelPrefix); ok {
		a.Invalidate(tenancyID)
	}
}
