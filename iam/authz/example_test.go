package authz_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/ferry-mq/ferry/iam/authz"
	"github.com/ferry-mq/ferry/iam/policy"
)

// Example shows the whole life of a decision: parse a policy's statements, compile the tenancy's policies with a
// resolver for compartment paths, load them into an engine, and decide a request on a queue in a sub-compartment.
func Example() {
	ctx := context.Background()
	const (
		tenancy = "ocid1.tenancy.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		prod    = "ocid1.compartment.ferry.local.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
		orders  = "ocid1.compartment.ferry.local.cccccccccccccccccccccccccccccccc"
	)
	statements, err := policy.ParseStatements([]string{
		"Allow group Producers to use queue-push in compartment Prod",
		"Allow group Producers to read queues in compartment Prod:Orders where target.queue.name = 'orders'",
	})
	if err != nil {
		panic(err) // a *policy.Error: answer 400 with its Statement and Column
	}
	// The resolver maps compartment names (paths from the root) to ids; here a fixed tree root → Prod → Orders.
	resolve := func(path []string) (string, bool) {
		id, ok := map[string]string{"Prod": prod, "Prod:Orders": orders}[strings.Join(path, ":")]
		return id, ok
	}
	compiled, err := authz.Load(tenancy, []authz.Policy{{ID: "ocid1.policy.ferry.local.p1", Statements: statements}}, resolve)
	if err != nil {
		panic(err)
	}
	engine, err := authz.New(ctx)
	if err != nil {
		panic(err)
	}
	if err := engine.SetTenancy(ctx, compiled); err != nil {
		panic(err)
	}

	decision, err := engine.Authorize(ctx, authz.Input{
		TenancyID:       tenancy,
		Principal:       "alice",
		Groups:          []string{"Producers"},
		Permission:      policy.PermQueuePush,
		Operation:       "PutMessages",
		CompartmentPath: []string{tenancy, prod, orders}, // root first, target compartment last
		CompartmentName: "Orders",
		QueueName:       "orders",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(decision.Allowed)
	for _, m := range decision.Matched {
		fmt.Println(m.PolicyID, m.Statement)
	}
	// Output:
	// true
	// ocid1.policy.ferry.local.p1 Allow group Producers to use queue-push in compartment Prod
}
