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
	// keys tells, for a permission and a grant key, which of the data's two indexes list statements under that key,
	// so that a request's input names only the keys the Rego module will find something under (see Input.value).
	// It mirrors the data exactly and is never modified after Load.
	keys map[string]map[string]keyKinds
}

// keyKinds tells under which of the data's indexes a grant key lists statements.
type keyKinds uint8

const (
	keyGrants      keyKinds = 1 << iota // data.tenancies[t].grants[permission][key]: statements without a condition
	keyConditional                      // data.tenancies[t].conditional[permission][key]: statements with one
)

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
	termStatements  = ast.StringTerm("statements")
	termGrants      = ast.StringTerm("grants")
	termConditional = ast.StringTerm("conditional")
	termIndex       = ast.StringTerm("index")
	termPolicyID    = ast.StringTerm("policy_id")
	termText        = ast.StringTerm("text")
	termSubjects    = ast.StringTerm("subjects")
	termLocation    = ast.StringTerm("location")
	termCondition   = ast.StringTerm("condition")
	termResult      = ast.StringTerm("result")
	termOp          = ast.StringTerm("op")
	termVar         = ast.StringTerm("var")
	termValue       = ast.StringTerm("value")
	termArgs        = ast.StringTerm("args")
)

// Load compiles a tenancy's policies into the data the Rego module reads (layout in authz.rego): the list of
// statements, and two indexes from (permission, location, subject) to the statements that grant it, one for the
// statements without a condition and one for those with one, so that a decision looks only at statements that can
// match instead of scanning the tenancy, and evaluates conditions only where there are some.
//
// Locations are resolved here, not per request: `tenancy` is the tenancy id, `compartment id <ocid>` is taken as
// is, and a path goes through resolve. Because names are resolved at load time, renaming, moving or deleting a
// compartment must be followed by a reload of the tenancy.
func Load(tenancyID string, policies []Policy, resolve Resolver) (*Tenancy, error) {
	if tenancyID == "" {
		return nil, errors.New("authz: load: empty tenancy id")
	}
	t := &Tenancy{ID: tenancyID, keys: map[string]map[string]keyKinds{}}
	var statements []*ast.Term
	// grants and conditional [permission][grant key] list statements in load order: grants lists their results
	// ([index, policy id, text], what a decision reports), conditional lists {result, condition}. One term per
	// statement is shared by every entry that lists it, so the indexes cost pointers, not copies.
	grants := map[string]map[string][]*ast.Term{}
	conditional := map[string]map[string][]*ast.Term{}
	for _, p := range policies {
		for _, s := range p.Statements {
			if depth := s.Condition.Depth(); depth > policy.MaxConditionDepth {
				return nil, fmt.Errorf("authz: load: policy %s: statement %q nests conditions %d levels deep (at most %d)",
					p.ID, s.Text, depth, policy.MaxConditionDepth)
			}
			location, resolved := resolveLocation(tenancyID, s.Location, resolve)
			subjects := subjectKeys(s.Subject)
			st, entry := statementTerms(len(statements), p.ID, s, subjects, location, resolved)
			statements = append(statements, st)
			if !resolved {
				t.Unresolved = append(t.Unresolved, MatchedStatement{PolicyID: p.ID, Statement: s.Text})
				continue
			}
			index, kind := grants, keyGrants
			if s.Condition != nil {
				index, kind = conditional, keyConditional
			}
			for _, perm := range s.Permissions() {
				byKey := index[perm]
				if byKey == nil {
					byKey = map[string][]*ast.Term{}
					index[perm] = byKey
				}
				kinds := t.keys[perm]
				if kinds == nil {
					kinds = map[string]keyKinds{}
					t.keys[perm] = kinds
				}
				for _, subject := range subjects {
					key := grantKey(location, subject)
					// A statement naming the same group twice must be listed once; it can only be the last entry.
					if list := byKey[key]; len(list) == 0 || list[len(list)-1] != entry {
						byKey[key] = append(list, entry)
					}
					kinds[key] |= kind
				}
			}
		}
	}
	t.StatementCount = len(statements)
	t.value = ast.NewObject(
		ast.Item(termStatements, ast.ArrayTerm(statements...)),
		ast.Item(termGrants, indexTerm(grants)),
		ast.Item(termConditional, indexTerm(conditional)),
	)
	return t, nil
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

// statementTerms returns a statement as the Rego module sees it in the statements list, and its entry in the
// indexes: its result [index, policy id, text] for a statement without a condition, {result, condition} for one
// with a condition. Subjects and location are there for whoever inspects the data; decisions reach statements
// through the indexes, which already encode them.
func statementTerms(index int, policyID string, s policy.Statement, subjects []string, location string, resolved bool) (st, entry *ast.Term) {
	subjectTerms := make([]*ast.Term, len(subjects))
	for i, subject := range subjects {
		subjectTerms[i] = ast.StringTerm(subject)
	}
	locationTerm := ast.NullTerm()
	if resolved {
		locationTerm = ast.StringTerm(location)
	}
	indexTerm, policyTerm, textTerm := ast.IntNumberTerm(index), ast.StringTerm(policyID), ast.StringTerm(s.Text)
	result := ast.ArrayTerm(indexTerm, policyTerm, textTerm)
	obj := ast.NewObject(
		ast.Item(termIndex, indexTerm),
		ast.Item(termPolicyID, policyTerm),
		ast.Item(termText, textTerm),
		ast.Item(termSubjects, ast.ArrayTerm(subjectTerms...)),
		ast.Item(termLocation, locationTerm),
	)
	if s.Condition == nil {
		return ast.NewTerm(obj), result
	}
	condition := conditionTerm(s.Condition)
	obj.Insert(termCondition, condition)
	return ast.NewTerm(obj), ast.ObjectTerm(ast.Item(termResult, result), ast.Item(termCondition, condition))
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
