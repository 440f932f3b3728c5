package iam

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/iam/authz"
	"github.com/ferry-mq/ferry/iam/policy"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/tenancy"
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
	// Metrics, when set, records every authorization's duration and the denials.
	Metrics *Metrics

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
	tree   atomic.Pointer[tenancy.Tree]
	queues map[string]queueRef // queue id → compartment and name (cleared with the tenancy)
	// queuesGen counts the clears of queues: a lookup that started before a clear must not store what it read
	// (the queue may have moved or been renamed since).
	queuesGen uint64
	qmu       sync.Mutex
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
	tree, err := tenancy.LoadTree(ctx, a.store.Compartments, tenancyID)
	if err != nil {
		return nil, err
	}
	rows, err := a.store.Policies.OfTenancy(ctx, tenancyID)
	if err != nil {
		return nil, err
	}
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
			return !inScope(tree, tenancyID, p.CompartmentID, s.Location)
		})
		policies = append(policies, authz.Policy{ID: p.ID, Statements: statements})
	}
	compiled, err := authz.Load(tenancyID, policies, tree.Resolve)
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
func inScope(tree *tenancy.Tree, tenancyID, home string, l policy.Location) bool {
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
		if id, ok = tree.Resolve(l.Path); !ok {
			return true
		}
	}
	return tree.Within(id, home)
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
	homeNames, ok := tree.Names(home)
	if !ok {
		return nil // not a compartment of the tenancy: the store answers 404
	}
	for i, s := range statements {
		var in bool
		switch l := s.Location; {
		case l.Tenancy:
		case l.ID != "":
			in = tree.Within(l.ID, home)
		default:
			in = len(l.Path) >= len(homeNames) && slices.Equal(l.Path[:len(homeNames)], homeNames)
		}
		if !in {
			return fault.InvalidParameter("statements[%d]: the location is outside compartment %s (%s), which the "+
				"policy is attached to: a policy grants only in its compartment and the compartments below it",
				i, strings.Join(homeNames, ":"), tree.Name(home))
		}
	}
	return nil
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
				return authz.Decision{}, fault.NotFoundIn("consumerGroupId", err)
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
		return d, fault.InvalidParameter("permission: %v", err)
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

// OnConfigNotify handles a notification from any node that a tenancy's policies or compartments changed.
func (a *Access) OnConfigNotify(n persistence.Notification) {
	if n.Kind == persistence.TenancyChanged {
		a.Invalidate(n.TenancyID)
	}
}
