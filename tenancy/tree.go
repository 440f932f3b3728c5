package tenancy

import (
	"context"
	"slices"

	"github.com/ferry-mq/ferry/persistence"
)

// Tree is one tenancy's compartments as one read saw them: ids → parent and name. It is never changed after it is
// built, so readers share it without a lock while the next one is being read (a change to the tenancy's
// compartments builds a new Tree).
type Tree struct {
	tenancyID string
	nodes     map[string]persistence.CompartmentNode
	children  map[string]map[string]string // parent id → name → id, live compartments only
}

// LoadTree reads the tenancy's compartment tree.
func LoadTree(ctx context.Context, compartments *persistence.Compartments, tenancyID string) (*Tree, error) {
	nodes, err := compartments.Tree(ctx, tenancyID)
	if err != nil {
		return nil, err
	}
	return NewTree(tenancyID, nodes), nil
}

// NewTree builds the tree of a tenancy from its compartments (the root's id is the tenancy's).
func NewTree(tenancyID string, nodes []persistence.CompartmentNode) *Tree {
	t := &Tree{tenancyID: tenancyID, nodes: make(map[string]persistence.CompartmentNode, len(nodes)),
		children: map[string]map[string]string{}}
	for _, n := range nodes {
		t.nodes[n.ID] = n
		if n.ParentID == nil || n.State == persistence.StateDeleted {
			continue
		}
		if t.children[*n.ParentID] == nil {
			t.children[*n.ParentID] = map[string]string{}
		}
		t.children[*n.ParentID][n.Name] = n.ID
	}
	return t
}

// Resolve maps a compartment path from the root (names, as in a policy's `in compartment A:B:C`) to the id of a
// live compartment.
func (t *Tree) Resolve(path []string) (id string, ok bool) {
	cur := t.tenancyID
	for _, name := range path {
		next, found := t.children[cur][name]
		if !found {
			return "", false
		}
		cur = next
	}
	return cur, true
}

// Ancestry is the path of compartment ids from the root down to id (inclusive), and id's name; ok is false when
// id is not a compartment of the tenancy.
func (t *Tree) Ancestry(id string) (path []string, name string, ok bool) {
	n, found := t.nodes[id]
	if !found {
		return nil, "", false
	}
	name = n.Name
	for depth := 0; depth < 1000; depth++ {
		path = append(path, n.ID)
		if n.ParentID == nil {
			break
		}
		if n, found = t.nodes[*n.ParentID]; !found {
			return nil, "", false
		}
	}
	if path[len(path)-1] != t.tenancyID {
		return nil, "", false
	}
	slices.Reverse(path)
	return path, name, true
}

// Within reports whether compartment id is ancestor or one of its descendants.
func (t *Tree) Within(id, ancestor string) bool {
	path, _, ok := t.Ancestry(id)
	return ok && slices.Contains(path, ancestor)
}

// Names is the path of names from the root down to id (the root itself has no name in a path: a compartment
// directly below the root is the path of its one name); ok is false when id is not a compartment of the tenancy.
func (t *Tree) Names(id string) (names []string, ok bool) {
	path, _, ok := t.Ancestry(id)
	if !ok {
		return nil, false
	}
	for _, c := range path[1:] {
		names = append(names, t.nodes[c].Name)
	}
	return names, true
}

// Name is the compartment's name ("" when unknown).
func (t *Tree) Name(id string) string { return t.nodes[id].Name }

// Below lists the live compartments strictly below id.
func (t *Tree) Below(id string) []string {
	var out []string
	for c, n := range t.nodes {
		if c != id && n.State != persistence.StateDeleted && t.Within(c, id) {
			out = append(out, c)
		}
	}
	return out
}
