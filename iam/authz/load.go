package authz

import (
	"errors"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/ferry-mq/ferry/iam/policy"
)

// Policy is one stored policy of a tenancy: its OCID (reported in Decision.Matched) and its parsed statements.
type Policy struct {
	ID         string
	Statements []policy.Statement
}

// Resolver maps a compartment path from the root (names, as in `in compartment A:B:C`; a single name is a path of
// one) to the compartment's id. ok is false when no such compartment exists.
type Resolver func(path []string) (id string, ok bool)

// Tenancy is one tenancy's policies compiled for the engine by Load. Treat it as read-only: it may then be written
// with SetTenancy any number of times, to any number of engines.
type Tenancy struct {
	// ID is the tenancy's OCID, which is also the id of its root compartment.
	ID string
	// StatementCount is how many statements were loaded, Unresolved included.
	StatementCount int
	// Unresolved lists the statements whose compartment path did not resolve. They are kept (in the data's
	// statements list) but never match until the tenancy is reloaded with a resolver that knows the compartment;
	// callers may want to log them.
	Unresolved []MatchedStatement

	value ast.Value
	// keys tells, for a permission and a grant key, which kinds of statements the data lists under that key, so
	// that a request's input names only the keys the Rego module will find something under (see Input.value): bit
	// keyGrants for statements without a condition (listed in the grants index and, as clauses that always hold,
	// in the conditional index too), keyConditional and keyConditions for those with one. It mirrors the data
	// exactly and is never modified after Load.
	keys map[string]map[string]keyKinds
	// listed holds the same keys as keys, by permission, location and subject, with what a request's input needs
	// of them (see listedKey). Split by location, most of a request's lookups end at a location that lists nothing,
	// without building a key.
	listed map[string]map[string]map[string]listedKey
	// memo remembers the decisions made against this tenancy's statements (Engine.Decide).
	memo decisionMemo
	// facts holds every fact "<variable>=<value>" that a clause of the conditional index lists in its relevant
	// set, as the term the data holds: the only such facts a request's input needs to state (see Input.value).
	facts map[string]*ast.Term
	// idTerm is ID as a term.
	idTerm *ast.Term
}

// listedKey is what a request's input needs of a grant key that the data lists: under which indexes, the key as a
// term, and which condition variables the conditions listed under it compare, so that the input states facts only
// about them (a fact about any other variable is in no relevant set of those clauses and no condition reads it,
// so leaving it out changes no decision).
type listedKey struct {
	kinds keyKinds
	vars  varMask
	term  *ast.Term
}

// varMask is a set of condition variables, bit i standing for conditionVariables[i].
type varMask uint8

// conditionVariables are the condition variables in varMask's bit order (Input.value lists a request's values in
// the same order).
var conditionVariables = [...]string{
	policy.VarRequestPermission,
	policy.VarRequestOperation,
	policy.VarRequestPrincipalID,
	policy.VarTargetCompartmentID,
	policy.VarTargetCompartmentName,
	policy.VarTargetQueueID,
	policy.VarTargetQueueName,
	policy.VarTargetConsumerGroupID,
}

// conditionVars returns the variables c compares. A variable the parser accepts but conditionVariables lacks would
// be a bug; Load refuses it rather than decide without it.
func conditionVars(c *policy.Condition) (varMask, error) {
	if c == nil {
		return 0, nil
	}
	if c.Op == policy.OpAll || c.Op == policy.OpAny {
		var mask varMask
		for _, child := range c.Conditions {
			m, err := conditionVars(child)
			if err != nil {
				return 0, err
			}
			mask |= m
		}
		return mask, nil
	}
	i := slices.Index(conditionVariables[:], c.Variable)
	if i < 0 {
		return 0, fmt.Errorf("unknown condition variable %q", c.Variable)
	}
	return 1 << i, nil
}

// keyKinds tells under which of the data's indexes (see authz.rego) a grant key lists entries.
type keyKinds uint8

const (
	keyGrants      keyKinds = 1 << iota // grants: statements without a condition
	keyConditional                      // conditional: the clauses of conditions
	keyConditions                       // conditions: conditions with more than maxClauses clauses, whole
	keyKindCount   = iota
)

// The indexes' numbers (keyKinds' bit numbers), for arrays indexed by index.
const (
	indexGrants = iota
	indexConditional
	indexConditions
)

// indexNames are the data's indexes, in keyKinds' bit order.
var indexNames = [keyKindCount]string{"grants", "conditional", "conditions"}

// Subject keys: every caller answers to subjectAnyUser and to subjectGroupPrefix+g for each of its groups g. The
// prefix keeps a group that happens to be named "any-user" from being taken for any-user.
const (
	subjectAnyUser     = "any-user"
	subjectGroupPrefix = "group:"
)

// grantKey is the key under which the indexes list the statements that grant a permission to a subject at a
// location. Location ids are OCIDs, which never contain '|', so the key is unambiguous whatever the group name.
func grantKey(location, subject string) string { return location + "|" + subject }

// Keys of the data layout (see authz.rego), interned once.
var (
	termStatements = ast.StringTerm("statements")
	termIndex      = ast.StringTerm("index")
	termPolicyID   = ast.StringTerm("policy_id")
	termText       = ast.StringTerm("text")
	termSubjects   = ast.StringTerm("subjects")
	termLocation   = ast.StringTerm("location")
	termCondition  = ast.StringTerm("condition")
	termResult     = ast.StringTerm("result")
	termOp         = ast.StringTerm("op")
	termVar        = ast.StringTerm("var")
	termValue      = ast.StringTerm("value")
	termArgs       = ast.StringTerm("args")
)

// Load compiles a tenancy's policies into the data the Rego module reads (layout in authz.rego): the list of
// statements, and indexes from (permission, location, subject) to the statements that grant it, so that a decision
// looks only at statements that can match instead of scanning the tenancy. Statements without a condition go to one
// index. A condition is rewritten as a disjunction of conjunctions of comparisons (its clauses), each listed in a
// second index in a form the Rego module checks with one set intersection (see clauseTerm); only a condition of more
// than maxClauses clauses goes whole to a third index, where the general (and several times slower) condition
// functions evaluate it.
//
// Locations are resolved here, not per request: `tenancy` is the tenancy id, `compartment id <ocid>` is taken as
// is, and a path goes through resolve. Because names are resolved at load time, renaming, moving or deleting a
// compartment must be followed by a reload of the tenancy.
func Load(tenancyID string, policies []Policy, resolve Resolver) (*Tenancy, error) {
	if tenancyID == "" {
		return nil, errors.New("authz: load: empty tenancy id")
	}
	t := &Tenancy{
		ID:     tenancyID,
		keys:   map[string]map[string]keyKinds{},
		listed: map[string]map[string]map[string]listedKey{},
		facts:  map[string]*ast.Term{},
		idTerm: ast.StringTerm(tenancyID),
	}
	var statements []*ast.Term
	// indexes[kind][permission][grant key] lists entries in load order (see authz.rego for each kind's entries).
	// The terms of a statement are shared by every entry that lists it, so the indexes cost pointers, not copies.
	var indexes [keyKindCount]map[string]map[string][]*ast.Term
	for i := range indexes {
		indexes[i] = map[string]map[string][]*ast.Term{}
	}
	for _, p := range policies {
		for _, s := range p.Statements {
			if depth := s.Condition.Depth(); depth > policy.MaxConditionDepth {
				return nil, fmt.Errorf("authz: load: policy %s: statement %q nests conditions %d levels deep (at most %d)",
					p.ID, s.Text, depth, policy.MaxConditionDepth)
			}
			location, resolved := resolveLocation(tenancyID, s.Location, resolve)
			subjects := subjectKeys(s.Subject)
			st, result := statementTerms(len(statements), p.ID, s, subjects, location, resolved)
			statements = append(statements, st)
			if !resolved {
				t.Unresolved = append(t.Unresolved, MatchedStatement{PolicyID: p.ID, Statement: s.Text})
				continue
			}
			vars, err := conditionVars(s.Condition)
			if err != nil {
				return nil, fmt.Errorf("authz: load: policy %s: statement %q: %w", p.ID, s.Text, err)
			}
			entries := indexEntries(s.Condition, result, t.facts)
			for _, perm := range s.Permissions() {
				kinds := t.keys[perm]
				if kinds == nil {
					kinds = map[string]keyKinds{}
					t.keys[perm] = kinds
				}
				byLocation := t.listed[perm]
				if byLocation == nil {
					byLocation = map[string]map[string]listedKey{}
					t.listed[perm] = byLocation
				}
				// A statement naming the same group twice must be listed once.
				for i, subject := range subjects {
					if slices.Contains(subjects[:i], subject) {
						continue
					}
					key := grantKey(location, subject)
					for _, e := range entries {
						byKey := indexes[e.kind][perm]
						if byKey == nil {
							byKey = map[string][]*ast.Term{}
							indexes[e.kind][perm] = byKey
						}
						byKey[key] = append(byKey[key], e.term)
						if !e.copy {
							kinds[key] |= 1 << e.kind
						}
					}
					if len(entries) > 0 {
						bySubject := byLocation[location]
						if bySubject == nil {
							bySubject = map[string]listedKey{}
							byLocation[location] = bySubject
						}
						l := bySubject[subject]
						if l.term == nil {
							l.term = ast.StringTerm(key)
						}
						l.kinds, l.vars = kinds[key], l.vars|vars
						bySubject[subject] = l
					}
				}
			}
		}
	}
	t.StatementCount = len(statements)
	obj := ast.NewObjectWithCapacity(1 + keyKindCount)
	obj.Insert(termStatements, ast.ArrayTerm(statements...))
	for kind, index := range indexes {
		obj.Insert(ast.StringTerm(indexNames[kind]), indexTerm(index))
	}
	t.value = obj
	return t, nil
}

// entry is what an index lists for a statement: kind is the index (a bit number of keyKinds). copy marks the
// conditional index's copy of a statement without a condition (see indexEntries), which is not a kind of its own.
type entry struct {
	kind int
	term *ast.Term
	copy bool
}

// emptySet is the relevant and required set of a clause that always holds.
var emptySet = ast.SetTerm()

// maxClauses bounds how many clauses a condition may be rewritten to; past it, the condition is evaluated whole.
// The rewrite multiplies out `all` of `any`s, so a statement can reach it only by combining several of them.
const maxClauses = 32

// indexEntries returns a statement's index entries: for a statement without a condition its result in the grants
// index and a clause that always holds ([result, {}, {}]) in the conditional index; else one entry per clause of
// its condition (see clauseTerm), or the whole condition ({result, condition}) when it has more than maxClauses
// clauses. A statement matches when any of its entries holds, as its condition holds when any of its clauses does;
// a clause that can never hold (it requires a variable to equal and differ from a value) is left out.
//
// The conditional index thus lists every statement that the grants index lists, so that a request whose keys list
// conditions can read everything from that one index, in one rule (see Input.value).
func indexEntries(c *policy.Condition, result *ast.Term, facts map[string]*ast.Term) []entry {
	if c == nil {
		return []entry{
			{kind: indexGrants, term: result},
			{kind: indexConditional, term: ast.ArrayTerm(result, emptySet, emptySet), copy: true},
		}
	}
	clauses, ok := disjunctiveNormalForm(c)
	if !ok {
		return []entry{{kind: indexConditions, term: ast.ObjectTerm(ast.Item(termResult, result), ast.Item(termCondition, conditionTerm(c)))}}
	}
	entries := make([]entry, 0, len(clauses))
	for _, clause := range clauses {
		if term, ok := clauseTerm(clause, result, facts); ok {
			entries = append(entries, entry{kind: indexConditional, term: term})
		}
	}
	return entries
}

// disjunctiveNormalForm rewrites c as clauses, any of which must hold, of comparisons, all of which must hold. This
// changes nothing about when c holds: comparisons are its only leaves (there is no negation) and all/any distribute
// over each other. ok is false when there would be more than maxClauses clauses.
func disjunctiveNormalForm(c *policy.Condition) (clauses [][]*policy.Condition, ok bool) {
	switch c.Op {
	case policy.OpAny:
		for _, child := range c.Conditions {
			sub, ok := disjunctiveNormalForm(child)
			if !ok || len(clauses)+len(sub) > maxClauses {
				return nil, false
			}
			clauses = append(clauses, sub...)
		}
		return clauses, true
	case policy.OpAll:
		clauses = [][]*policy.Condition{nil}
		for _, child := range c.Conditions {
			sub, ok := disjunctiveNormalForm(child)
			if !ok || len(clauses)*len(sub) > maxClauses {
				return nil, false
			}
			product := make([][]*policy.Condition, 0, len(clauses)*len(sub))
			for _, a := range clauses {
				for _, b := range sub {
					product = append(product, append(slices.Clip(a), b...))
				}
			}
			clauses = product
		}
		return clauses, true
	}
	return [][]*policy.Condition{{c}}, true
}

// Facts are what a clause is checked against: a request's facts (Input.facts) are "<variable>" for every condition
// variable it has a value for and "<variable>=<value>" for that value. Variable names never contain '=', so the two
// kinds cannot be confused whatever the value.
func fact(variable, value string) string { return variable + "=" + value }

// clauseTerm is a clause's entry in the conditional index, [result, relevant, required] (an array, which the Rego
// module takes apart in one unification where an object takes one step per field): the request's facts must
// include every fact in required and no other fact in relevant, which Rego checks as
// `facts & relevant == required`. A comparison `v = 'x'` requires the fact v=x; `v != 'x'` requires v (a value) and
// puts v=x in relevant without requiring it (that value must not be the one). ok is false for a clause that can
// never hold because it requires a fact that it also forbids.
func clauseTerm(clause []*policy.Condition, result *ast.Term, facts map[string]*ast.Term) (term *ast.Term, ok bool) {
	required, relevant := ast.NewSet(), ast.NewSet()
	var forbidden []*ast.Term
	factTerm := func(variable, value string) *ast.Term {
		f := fact(variable, value)
		term := facts[f]
		if term == nil {
			term = ast.StringTerm(f)
			facts[f] = term
		}
		return term
	}
	for _, c := range clause {
		if c.Op == policy.OpEqual {
			f := factTerm(c.Variable, c.Value)
			required.Add(f)
			relevant.Add(f)
			continue
		}
		v, f := ast.StringTerm(c.Variable), factTerm(c.Variable, c.Value)
		required.Add(v)
		relevant.Add(v)
		relevant.Add(f)
		forbidden = append(forbidden, f)
	}
	for _, f := range forbidden {
		if required.Contains(f) {
			return nil, false
		}
	}
	return ast.ArrayTerm(result, ast.NewTerm(relevant), ast.NewTerm(required)), true
}

func indexTerm(index map[string]map[string][]*ast.Term) *ast.Term {
	obj := ast.NewObjectWithCapacity(len(index))
	for perm, byKey := range index {
		lists := ast.NewObjectWithCapacity(len(byKey))
		for key, list := range byKey {
			lists.Insert(ast.StringTerm(key), ast.ArrayTerm(list...))
		}
		obj.Insert(ast.StringTerm(perm), ast.NewTerm(lists))
	}
	return ast.NewTerm(obj)
}

func resolveLocation(tenancyID string, l policy.Location, resolve Resolver) (string, bool) {
	switch {
	case l.Tenancy:
		return tenancyID, true
	case l.ID != "":
		return l.ID, true
	case len(l.Path) > 0 && resolve != nil:
		id, ok := resolve(slices.Clone(l.Path))
		return id, ok && id != ""
	}
	return "", false
}

func subjectKeys(s policy.Subject) []string {
	if s.AnyUser {
		return []string{subjectAnyUser}
	}
	keys := make([]string, len(s.Groups))
	for i, g := range s.Groups {
		keys[i] = subjectGroupPrefix + g
	}
	return keys
}

// statementTerms returns a statement as the Rego module sees it in the statements list, and its result
// [index, policy id, text], which is what a decision reports. Subjects, location and condition are there for
// whoever inspects the data; decisions reach statements through the indexes, which already encode them.
func statementTerms(index int, policyID string, s policy.Statement, subjects []string, location string, resolved bool) (st, result *ast.Term) {
	subjectTerms := make([]*ast.Term, len(subjects))
	for i, subject := range subjects {
		subjectTerms[i] = ast.StringTerm(subject)
	}
	locationTerm := ast.NullTerm()
	if resolved {
		locationTerm = ast.StringTerm(location)
	}
	indexTerm, policyTerm, textTerm := ast.IntNumberTerm(index), ast.StringTerm(policyID), ast.StringTerm(s.Text)
	obj := ast.NewObject(
		ast.Item(termIndex, indexTerm),
		ast.Item(termPolicyID, policyTerm),
		ast.Item(termText, textTerm),
		ast.Item(termSubjects, ast.ArrayTerm(subjectTerms...)),
		ast.Item(termLocation, locationTerm),
	)
	if s.Condition != nil {
		obj.Insert(termCondition, conditionTerm(s.Condition))
	}
	return ast.NewTerm(obj), ast.ArrayTerm(indexTerm, policyTerm, textTerm)
}

func conditionTerm(c *policy.Condition) *ast.Term {
	if c.Op == policy.OpAll || c.Op == policy.OpAny {
		args := make([]*ast.Term, len(c.Conditions))
		for i, child := range c.Conditions {
			args[i] = conditionTerm(child)
		}
		return ast.ObjectTerm(ast.Item(termOp, ast.StringTerm(string(c.Op))), ast.Item(termArgs, ast.ArrayTerm(args...)))
	}
	return ast.ObjectTerm(
		ast.Item(termOp, ast.StringTerm(string(c.Op))),
		ast.Item(termVar, ast.StringTerm(c.Variable)),
		ast.Item(termValue, ast.StringTerm(c.Value)),
	)
}
