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
}

// Subject keys: every caller answers to subjectAnyUser and to subjectGroupPrefix+g for each of its groups g. The
// prefix keeps a group that happens to be named "any-user" from being taken for any-user.
const (
	subjectAnyUser     = "any-user"
	subjectGroupPrefix = "group:"
)

// grantKey is the key under which the grants index lists the statements that grant a permission to a subject at a
// location. Location ids are OCIDs, which never contain '|', so the key is unambiguous whatever the group name.
func grantKey(location, subject string) string { return location + "|" + subject }

// Keys of the data layout (see authz.rego), interned once.
var (
	termStatements = ast.StringTerm("statements")
	termGrants     = ast.StringTerm("grants")
	termIndex      = ast.StringTerm("index")
	termPolicyID   = ast.StringTerm("policy_id")
	termText       = ast.StringTerm("text")
	termSubjects   = ast.StringTerm("subjects")
	termLocation   = ast.StringTerm("location")
	termCondition  = ast.StringTerm("condition")
	termOp         = ast.StringTerm("op")
	termVar        = ast.StringTerm("var")
	termValue      = ast.StringTerm("value")
	termArgs       = ast.StringTerm("args")
)

// Load compiles a tenancy's policies into the data the Rego module reads (layout in authz.rego): the list of
// statements, and an index from (permission, location, subject) to the statements that grant it, so that a decision
// looks only at statements that can match instead of scanning the tenancy.
//
// Locations are resolved here, not per request: `tenancy` is the tenancy id, `compartment id <ocid>` is taken as
// is, and a path goes through resolve. Because names are resolved at load time, renaming, moving or deleting a
// compartment must be followed by a reload of the tenancy.
func Load(tenancyID string, policies []Policy, resolve Resolver) (*Tenancy, error) {
	if tenancyID == "" {
		return nil, errors.New("authz: load: empty tenancy id")
	}
	t := &Tenancy{ID: tenancyID}
	var statements []*ast.Term
	// grants[permission][grant key] lists the statements in load order; one statement term is shared by every
	// entry that lists it, so the index costs pointers, not copies.
	grants := map[string]map[string][]*ast.Term{}
	for _, p := range policies {
		for _, s := range p.Statements {
			if depth := s.Condition.Depth(); depth > policy.MaxConditionDepth {
				return nil, fmt.Errorf("authz: load: policy %s: statement %q nests conditions %d levels deep (at most %d)",
					p.ID, s.Text, depth, policy.MaxConditionDepth)
			}
			location, resolved := resolveLocation(tenancyID, s.Location, resolve)
			subjects := subjectKeys(s.Subject)
			st := statementTerm(len(statements), p.ID, s, subjects, location, resolved)
			statements = append(statements, st)
			if !resolved {
				t.Unresolved = append(t.Unresolved, MatchedStatement{PolicyID: p.ID, Statement: s.Text})
				continue
			}
			for _, perm := range s.Permissions() {
				byKey := grants[perm]
				if byKey == nil {
					byKey = map[string][]*ast.Term{}
					grants[perm] = byKey
				}
				for _, subject := range subjects {
					key := grantKey(location, subject)
					// A statement naming the same group twice must be listed once; it can only be the last entry.
					if list := byKey[key]; len(list) == 0 || list[len(list)-1] != st {
						byKey[key] = append(list, st)
					}
				}
			}
		}
	}
	t.StatementCount = len(statements)

	grantsObj := ast.NewObjectWithCapacity(len(grants))
	for perm, byKey := range grants {
		index := ast.NewObjectWithCapacity(len(byKey))
		for key, list := range byKey {
			index.Insert(ast.StringTerm(key), ast.ArrayTerm(list...))
		}
		grantsObj.Insert(ast.StringTerm(perm), ast.NewTerm(index))
	}
	t.value = ast.NewObject(
		ast.Item(termStatements, ast.ArrayTerm(statements...)),
		ast.Item(termGrants, ast.NewTerm(grantsObj)),
	)
	return t, nil
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

// statementTerm is a statement as the Rego module sees it. Subjects and location are there for whoever inspects
// the data; decisions reach statements through the grants index, which already encodes them.
func statementTerm(index int, policyID string, s policy.Statement, subjects []string, location string, resolved bool) *ast.Term {
	subjectTerms := make([]*ast.Term, len(subjects))
	for i, subject := range subjects {
		subjectTerms[i] = ast.StringTerm(subject)
	}
	locationTerm := ast.NullTerm()
	if resolved {
		locationTerm = ast.StringTerm(location)
	}
	obj := ast.NewObject(
		ast.Item(termIndex, ast.IntNumberTerm(index)),
		ast.Item(termPolicyID, ast.StringTerm(policyID)),
		ast.Item(termText, ast.StringTerm(s.Text)),
		ast.Item(termSubjects, ast.ArrayTerm(subjectTerms...)),
		ast.Item(termLocation, locationTerm),
	)
	if s.Condition != nil {
		obj.Insert(termCondition, conditionTerm(s.Condition))
	}
	return ast.NewTerm(obj)
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
