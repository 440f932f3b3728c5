package policy_test

import (
	"errors"
	"fmt"

	"github.com/ferry-mq/ferry/iam/policy"
)

// ExampleParseStatements shows a statement's parsed form, the permissions it grants, and how a syntax error points
// at the statement and column to report.
func ExampleParseStatements() {
	statements, err := policy.ParseStatements([]string{
		"allow group 'Queue Admins' to USE queue-family in compartment Prod:Orders where request.operation != 'PurgeQueue'",
	})
	if err != nil {
		panic(err)
	}
	s := statements[0]
	fmt.Println(s.Subject.Groups, s.Verb, s.ResourceType, s.Location.Path)
	fmt.Println(s.Permissions())
	fmt.Println(s)

	_, err = policy.ParseStatements([]string{
		"Allow group Admins to manage all-resources in tenancy",
		"Allow group Admins manage queues in tenancy",
	})
	var perr *policy.Error
	if errors.As(err, &perr) {
		fmt.Println(perr.Statement, perr.Column, perr.Message)
	}
	fmt.Println(err)
	// Output:
	// [Queue Admins] use queue-family [Prod Orders]
	// [QUEUE_INSPECT QUEUE_METRICS_READ QUEUE_PULL QUEUE_PUSH QUEUE_READ QUEUE_UPDATE]
	// Allow group 'Queue Admins' to use queue-family in compartment Prod:Orders where request.operation != 'PurgeQueue'
	// 1 20 expected ',' or 'to', found "manage"
	// statement 1, column 20: expected ',' or 'to', found "manage"
}
