package authz

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/ferry-mq/ferry/iam/policy"
)

// Input is one request to decide. Everything comes from the authenticated caller and from the target resource as
// the caller's own tenancy sees it; CompartmentPath is the one field that takes care to build.
type Input struct {
	// TenancyID is the caller's tenancy (the JWT's tenancy claim), not the target's: only this tenancy's statements
	// are considered.
	TenancyID string
	// Principal is the caller (the JWT's sub claim); it is request.principal.id in conditions.
	Principal string
	// Groups are the caller's groups (the JWT's groups claim), matched case-sensitively against statement subjects.
	Groups []string
	// Permission is the one permission the operation needs, e.g. policy.PermQueuePush.
	Permission string
	// Operation is the API operation's name (e.g. "PutMessages"); it is request.operation in conditions.
	Operation string
	// CompartmentPath holds the compartment ids from the root (the tenancy id) down to the target compartment: the
	// compartment the resource lives in, or for compartment operations the compartment itself (for create: the
	// parent). A statement matches when its location is any element, which is how a statement covers a subtree.
	// A path that does not start with TenancyID is denied outright.
	CompartmentPath []string
	// CompartmentName is the target compartment's name (target.compartment.name); its id is the path's last
	// element (target.compartment.id).
	CompartmentName string
	// QueueID, QueueName and ConsumerGroupID describe the target for conditions; empty when the request has none.
	QueueID         string
	QueueName       string
	ConsumerGroupID string
}

// Decision is the outcome of Authorize.
type Decision struct {
	// Allowed is true when at least one statement matched.
	Allowed bool
	// Matched lists every statement that allowed the request, in load order (policies in the order given to Load,
	// statements in policy order); the policy simulator shows it to explain a decision.
	Matched []MatchedStatement
}

// MatchedStatement identifies a statement: the policy that holds it and its source text.
type MatchedStatement struct {
	PolicyID  string
	Statement string
}

// Authorize decides in. A denial is a Decision with Allowed false and a nil error; an error means the decision
// could not be made (invalid input, cancelled context, a bug) and the request must be refused all the same.
func (e *Engine) Authorize(ctx context.Context, in Input) (Decision, error) {
	d, _, err := e.authorize(ctx, in)
	return d, err
}

// authorize is Authorize, and also returns the tenancy whose statements decided (nil when the engine holds none).
func (e *Engine) authorize(ctx context.Context, in Input) (Decision, *Tenancy, error) {
	if in.TenancyID == "" || in.Permission == "" || len(in.CompartmentPath) == 0 {
		return Decision{}, nil, fmt.Errorf("authz: authorize: %w: tenancy, permission and compartment path are required",
			ErrInvalidInput)
	}
	// A caller that has gone away gets no decision. Evaluation itself is not watched for cancellation: a
	// decision takes microseconds and iterates nothing unbounded (the statements listed under the request's keys),
	// and watching ctx cost two allocations and a lock on ctx for every decision.
	if err := ctx.Err(); err != nil {
		return Decision{}, nil, fmt.Errorf("authz: authorize: %w", err)
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.txn == nil {
		return Decision{}, nil, errors.New("authz: authorize: no store transaction")
	}
	t := e.tenancies[in.TenancyID]
	var matched *ast.Term
	err := topdown.NewQuery(e.query).
		WithCompiler(e.compiler).
		WithQueryCompiler(e.queryCompiler).
		WithStore(e.store).
		WithTransaction(e.txn).
		WithInput(ast.NewTerm(in.value(t))).
		WithIndexing(true).
		WithEarlyExit(true).
		// What follows drops per-evaluation work that a decision this small does not pay back: a metrics
		// registry nobody reads and caches (see noBaseCache).
		WithMetrics(metrics.NoOp()).
		WithBaseCache(noBaseCache{}).
		WithVirtualCache(noVirtualCache{}).
		WithRequestMetadata(noRequestMetadata).
		Iter(ctx, func(qr topdown.QueryResult) error {
			if matched != nil {
				return errUnexpectedResult
			}
			matched = qr[resultVar]
			return nil
		})
	if err != nil {
		return Decision{}, nil, fmt.Errorf("authz: authorize: %w", err)
	}
	d, err := decode(matched)
	if err != nil {
		return Decision{}, nil, fmt.Errorf("authz: authorize: %w", err)
	}
	return d, t, nil
}

// noBaseCache and noVirtualCache stand in for OPA's per-evaluation caches of base documents and rule results.
// Both are pure optimizations that do not pay here: the base cache saves converting store data to AST values, which
// an AST store (see New) never needs, and the virtual cache saves evaluating a rule twice, which the query never
// does. Allocating their maps was a fifth of a decision's cost.
type (
	noBaseCache    struct{}
	noVirtualCache struct{}
)

// noRequestMetadata stands in for the map that OPA otherwise allocates per evaluation for builtins that read request
// metadata; no builtin the module calls reads or writes it, so one empty map serves every decision.
var noRequestMetadata = map[string]any{}

func (noBaseCache) Get(ast.Ref) ast.Value  { return nil }
func (noBaseCache) Put(ast.Ref, ast.Value) {}

func (noVirtualCache) Push()                         {}
func (noVirtualCache) Pop()                          {}
func (noVirtualCache) Get(ast.Ref) (*ast.Term, bool) { return nil, false }
func (noVirtualCache) Put(ast.Ref, *ast.Term)        {}
func (noVirtualCache) Keys() []ast.Ref               { return nil }

// Input object keys, interned once rather than allocated per request.
var (
	keyTenancy    = ast.StringTerm("tenancy")
	keyPermission = ast.StringTerm("permission")
	keyRoot       = ast.StringTerm("root")
	keyVars       = ast.StringTerm("vars")
	keyFacts      = ast.StringTerm("facts")
	// keyKeys are the input's key lists, one per index, in keyKinds' bit order.
	keyKeys = [keyKindCount]*ast.Term{ast.StringTerm("keys"), ast.StringTerm("conditional_keys"), ast.StringTerm("condition_keys")}

	// conditionVariableTerms are conditionVariables as terms, in the same order.
	conditionVariableTerms = func() (terms [len(conditionVariables)]*ast.Term) {
		for i, v := range conditionVariables {
			terms[i] = ast.StringTerm(v)
		}
		return terms
	}()

	// permissionTerms holds every permission as a term.
	permissionTerms = func() map[string]*ast.Term {
		terms := map[string]*ast.Term{}
		for _, p := range policy.AllPermissions() {
			terms[p] = ast.StringTerm(p)
		}
		return terms
	}()
)

// value builds the Rego input (layout in authz.rego) directly as an AST value. Of the grant keys the caller answers
// to (every location on the path with every subject of the caller), it passes each index only those under which
// t's data lists entries for the permission: the Rego module would look each of the others up and find nothing,
// which changes no decision but costs a lookup per key (most of them: a request has about a dozen keys and
// typically one or two are listed). The module still decides on the data alone: a key passed here only tells it
// where to look. t is nil for a tenancy the engine does not hold, whose requests then carry no keys.
//
// Strings the tenancy or the permission table already holds as terms (the tenancy id, the permission, the listed
// keys, the facts that clauses mention) are reused rather than allocated: allocation drives the collector, and on
// a busy machine the collector drives the latency tail.
func (in Input) value(t *Tenancy) ast.Value {
	var tenancy *ast.Term
	if t != nil && t.ID == in.TenancyID {
		tenancy = t.idTerm
	} else {
		tenancy = ast.StringTerm(in.TenancyID)
	}
	root := tenancy
	if in.CompartmentPath[0] != in.TenancyID {
		root = ast.StringTerm(in.CompartmentPath[0])
	}
	permission, ok := permissionTerms[in.Permission]
	if !ok {
		permission = ast.StringTerm(in.Permission)
	}
	obj := ast.NewObjectWithCapacity(8)
	obj.Insert(keyTenancy, tenancy)
	obj.Insert(keyPermission, permission)
	obj.Insert(keyRoot, root)

	var byLocation map[string]map[string]listedKey
	if t != nil {
		byLocation = t.listed[in.Permission]
	}
	// The listed keys among those the caller answers to, and what the conditions listed under them compare. Looking a
	// subject up converts it without allocating.
	var found [16]listedKey
	matches := found[:0]
	var kinds keyKinds
	var used varMask
	if len(byLocation) > 0 {
		var buf [128]byte
		for _, location := range in.CompartmentPath {
			bySubject := byLocation[location]
			if len(bySubject) == 0 {
				continue
			}
			add := func(subject []byte) {
				if l, ok := bySubject[string(subject)]; ok {
					matches = append(matches, l)
					kinds |= l.kinds
					used |= l.vars
				}
			}
			add(append(buf[:0], subjectAnyUser...))
			for _, g := range in.Groups {
				add(append(append(buf[:0], subjectGroupPrefix...), g...))
			}
		}
	}
	// Statements without a condition are read from the grants index, unless some key lists clauses: then every
	// key goes to the conditional index, which lists those statements too (as clauses that always hold), so that
	// one rule reads the data once instead of two rules each reading it.
	grantsIndex := indexGrants
	if kinds&keyConditional != 0 {
		grantsIndex = indexConditional
	}
	var keys [keyKindCount][]*ast.Term
	for _, l := range matches {
		if l.kinds&(keyGrants|keyConditional) != 0 {
			index := indexConditional
			if l.kinds&keyConditional == 0 {
				index = grantsIndex
			}
			keys[index] = append(keys[index], l.term)
		}
		if l.kinds&keyConditions != 0 {
			keys[indexConditions] = append(keys[indexConditions], l.term)
		}
	}
	for kind, list := range keys {
		if len(list) > 0 {
			obj.Insert(keyKeys[kind], ast.ArrayTerm(list...))
		}
	}
	if len(keys[indexConditional]) == 0 && len(keys[indexConditions]) == 0 {
		return obj
	}
	// The condition variables (in conditionVariables' order), as facts for the conditional index and as vars for
	// the conditions index; only those that the conditions under the keys compare.
	vars := [len(conditionVariables)]string{
		in.Permission,
		in.Operation,
		in.Principal,
		in.CompartmentPath[len(in.CompartmentPath)-1],
		in.CompartmentName,
		in.QueueID,
		in.QueueName,
		in.ConsumerGroupID,
	}
	// A variable without a value is left out, so that every comparison on it is false. Of the facts "<v>=<value>",
	// only those that some clause of the tenancy lists in its relevant set are stated: `facts & relevant` is the
	// same without the others, and the ones stated are the tenancy's terms.
	if len(keys[indexConditional]) > 0 {
		facts := ast.NewSetWithCapacity(2 * bits.OnesCount8(uint8(used)))
		var buf [256]byte
		for i, value := range vars {
			if used&(1<<i) == 0 || value == "" {
				continue
			}
			facts.Add(conditionVariableTerms[i])
			b := append(append(append(buf[:0], conditionVariables[i]...), '='), value...)
			if term := t.facts[string(b)]; term != nil {
				facts.Add(term)
			}
		}
		obj.Insert(keyFacts, ast.NewTerm(facts))
	}
	if len(keys[indexConditions]) > 0 {
		object := ast.NewObjectWithCapacity(bits.OnesCount8(uint8(used)))
		for i, value := range vars {
			if used&(1<<i) != 0 && value != "" {
				object.Insert(conditionVariableTerms[i], ast.StringTerm(value))
			}
		}
		obj.Insert(keyVars, ast.NewTerm(object))
	}
	return obj
}

var errUnexpectedResult = errors.New("unexpected result from the authz query")

// decode reads the query's value, the set of [index, policy id, text] of the statements that allow the request.
func decode(matched *ast.Term) (Decision, error) {
	if matched == nil {
		return Decision{}, fmt.Errorf("%w: no value", errUnexpectedResult)
	}
	matchedSet, ok := matched.Value.(ast.Set)
	if !ok {
		return Decision{}, fmt.Errorf("%w: %v", errUnexpectedResult, matched)
	}
	d := Decision{Allowed: matchedSet.Len() > 0}
	if !d.Allowed {
		return d, nil
	}
	// Slice lists the set in OPA's order of terms, which for [index, policy id, text] is load order (numbers
	// compare by value); load order is the contract, so it is checked rather than assumed.
	terms := matchedSet.Slice()
	d.Matched = make([]MatchedStatement, len(terms))
	var buf [8]int
	indexes := buf[:0]
	for i, t := range terms {
		triple, ok := t.Value.(*ast.Array)
		if !ok || triple.Len() != 3 {
			return Decision{}, fmt.Errorf("%w: matched statement %v", errUnexpectedResult, t)
		}
		number, ok0 := triple.Elem(0).Value.(ast.Number)
		policyID, ok1 := triple.Elem(1).Value.(ast.String)
		text, ok2 := triple.Elem(2).Value.(ast.String)
		index, ok3 := number.Int()
		if !ok0 || !ok1 || !ok2 || !ok3 {
			return Decision{}, fmt.Errorf("%w: matched statement %v", errUnexpectedResult, t)
		}
		indexes = append(indexes, index)
		d.Matched[i] = MatchedStatement{PolicyID: string(policyID), Statement: string(text)}
	}
	if !slices.IsSorted(indexes) {
		order := make([]int, len(indexes))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return indexes[a] - indexes[b] })
		sorted := make([]MatchedStatement, len(order))
		for i, j := range order {
			sorted[i] = d.Matched[j]
		}
		d.Matched = sorted
	}
	return d, nil
}
