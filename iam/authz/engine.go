// Package authz decides IAM requests (DESIGN section 5) with an embedded OPA: one Rego module, prepared once and
// shared by every goroutine, evaluated against the parsed policy statements of the caller's tenancy, which are held
// as data in an in-memory OPA store keyed by tenancy id.
//
// Policies enter the engine in two steps: Load compiles a tenancy's parsed statements into the data layout the
// Rego module reads (resolving compartment paths to ids on the way), and Engine.SetTenancy writes it in one store
// transaction. Changing policies never re-prepares the query, and a decision in flight sees either the old or the
// new statements of a tenancy, never a mix.
package authz

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

//go:embed authz.rego
var module string

// decisionQuery is the one query the engine prepares; see authz.rego for the rules behind it. Its value (bound to
// resultVar) is the set of statements that allow the request, and the request is allowed when that set is not
// empty: deciding that in the query too (count(matched) > 0) cost two more evaluation steps, a tenth of a typical
// decision.
const decisionQuery = "result = data.ferry.authz.matched"

var resultVar = ast.Var("result")

// tenanciesRoot is the store path under which each tenancy's compiled statements live.
var tenanciesRoot = storage.Path{"tenancies"}

// ErrInvalidInput is returned by Authorize when the input lacks what every decision needs (tenancy, permission,
// compartment path): that is a bug in the caller, not a denial.
var ErrInvalidInput = errors.New("invalid authorization input")

// Engine decides requests. It is safe for concurrent use: Authorize may run on any number of goroutines while
// SetTenancy and RemoveTenancy replace tenancies' statements.
type Engine struct {
	store storage.Store
	// compiler holds the compiled module and query the compiled decisionQuery, both prepared once by New; every
	// decision evaluates query with OPA's evaluator (topdown). The rego package's PreparedEvalQuery does the same
	// evaluation but first builds an evaluation context and a metrics registry and opens a store transaction per
	// call: with 10 statements that was a third of a decision.
	compiler      *ast.Compiler
	queryCompiler ast.QueryCompiler
	query         ast.Body

	// mu keeps tenancies and txn in step with the store: SetTenancy and RemoveTenancy change all three under the
	// write lock, and Authorize holds the read lock from reading a tenancy's keys until its evaluation is done, so a
	// decision reads the keys and the data of the same Load.
	mu        sync.RWMutex
	tenancies map[string]*Tenancy
	// txn is a read transaction on the store that every decision shares (reads are safe to run concurrently), so
	// that no decision opens and closes one of its own. A writer must first close it, since the store's commit waits
	// for open read transactions; SetTenancy and RemoveTenancy do so under mu's write lock and open a new one after
	// their write. nil when opening it failed, in which case decisions fail.
	txn storage.Transaction
}

// New prepares the Rego query over an empty store. Until SetTenancy is called for a tenancy, every request in it is
// denied.
func New(ctx context.Context) (*Engine, error) {
	// AST values on read: Load writes the data as AST values and the evaluator reads them back as they are, instead
	// of converting Go maps to AST values on every read of a decision.
	store := inmem.NewWithOpts(inmem.OptReturnASTValuesOnRead(true))
	if err := storage.WriteOne(ctx, store, storage.AddOp, tenanciesRoot, ast.NewObject()); err != nil {
		return nil, fmt.Errorf("authz: initialize store: %w", err)
	}
	parsed, err := ast.ParseModuleWithOpts("authz.rego", module, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return nil, fmt.Errorf("authz: parse module: %w", err)
	}
	compiler := ast.NewCompiler()
	if compiler.Compile(map[string]*ast.Module{"authz.rego": parsed}); compiler.Failed() {
		return nil, fmt.Errorf("authz: compile module: %w", compiler.Errors)
	}
	queryCompiler := compiler.QueryCompiler()
	query, err := queryCompiler.Compile(ast.MustParseBody(decisionQuery))
	if err != nil {
		return nil, fmt.Errorf("authz: prepare query: %w", err)
	}
	e := &Engine{store: store, compiler: compiler, queryCompiler: queryCompiler, query: query, tenancies: map[string]*Tenancy{}}
	if err := e.openTxn(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// openTxn opens the shared read transaction. The caller holds mu's write lock (or is New).
func (e *Engine) openTxn(ctx context.Context) error {
	txn, err := e.store.NewTransaction(ctx)
	if err != nil {
		e.txn = nil
		return fmt.Errorf("authz: open read transaction: %w", err)
	}
	e.txn = txn
	return nil
}

// closeTxn closes the shared read transaction so that a write can commit. The caller holds mu's write lock.
func (e *Engine) closeTxn(ctx context.Context) {
	if e.txn != nil {
		e.store.Abort(ctx, e.txn)
		e.txn = nil
	}
}

// SetTenancy replaces the statements of each given tenancy (compiled by Load) in a single store transaction, so
// loading every tenancy at startup is one write, and a change to one tenancy's policies takes effect for the next
// decision. The commit waits for decisions in flight and holds new ones back while it swaps the data in, which takes
// microseconds: the compiling was done by Load, outside any lock.
func (e *Engine) SetTenancy(ctx context.Context, tenancies ...*Tenancy) error {
	for _, t := range tenancies {
		if t == nil || t.value == nil {
			return errors.New("authz: set tenancy: not compiled by Load")
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closeTxn(ctx)
	err := storage.Txn(ctx, e.store, storage.WriteParams, func(txn storage.Transaction) error {
		for _, t := range tenancies {
			if err := e.store.Write(ctx, txn, storage.AddOp, tenancyPath(t.ID), t.value); err != nil {
				return fmt.Errorf("tenancy %s: %w", t.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return errors.Join(fmt.Errorf("authz: set tenancy: %w", err), e.openTxn(ctx))
	}
	for _, t := range tenancies {
		e.tenancies[t.ID] = t
	}
	return e.openTxn(ctx)
}

// RemoveTenancy drops a tenancy's statements, denying everything in it from then on. Removing a tenancy the engine
// does not hold is not an error.
func (e *Engine) RemoveTenancy(ctx context.Context, tenancyID string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.tenancies, tenancyID)
	e.closeTxn(ctx)
	err := storage.WriteOne(ctx, e.store, storage.RemoveOp, tenancyPath(tenancyID), nil)
	if err != nil && !storage.IsNotFound(err) {
		return errors.Join(fmt.Errorf("authz: remove tenancy %s: %w", tenancyID, err), e.openTxn(ctx))
	}
	return e.openTxn(ctx)
}

func tenancyPath(tenancyID string) storage.Path {
	return append(tenanciesRoot[:len(tenanciesRoot):len(tenanciesRoot)], tenancyID)
}
