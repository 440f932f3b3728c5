package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	compartmentOCID = "ocid1.compartment.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	tenancyOCID     = "ocid1.tenancy.ferry.local.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func eq(variable, value string) *Condition {
	return &Condition{Op: OpEqual, Variable: variable, Value: value}
}

func ne(variable, value string) *Condition {
	return &Condition{Op: OpNotEqual, Variable: variable, Value: value}
}

func all(cs ...*Condition) *Condition { return &Condition{Op: OpAll, Conditions: cs} }
func anyOf(cs ...*Condition) *Condition {
	return &Condition{Op: OpAny, Conditions: cs}
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	admins := Subject{Groups: []string{"Administrators"}}
	tenancy := Location{Tenancy: true}
	tests := []struct {
		name string
		text string
		want Statement
	}{
		{"group, manage, all-resources, tenancy", "Allow group Administrators to manage all-resources in tenancy",
			Statement{Subject: admins, Verb: VerbManage, ResourceType: ResourceAllResources, Location: tenancy}},
		{"any-user", "Allow any-user to inspect queues in tenancy",
			Statement{Subject: Subject{AnyUser: true}, Verb: VerbInspect, ResourceType: ResourceQueues, Location: tenancy}},
		{"several groups", "Allow group A, group queue-producers,group 'Queue Admins' to use queue-push in tenancy",
			Statement{Subject: Subject{Groups: []string{"A", "queue-producers", "Queue Admins"}}, Verb: VerbUse,
				ResourceType: ResourceQueuePush, Location: tenancy}},
		{"double-quoted group", `Allow group "Bob's team" to read queues in tenancy`,
			Statement{Subject: Subject{Groups: []string{"Bob's team"}}, Verb: VerbRead, ResourceType: ResourceQueues,
				Location: tenancy}},
		{"quoted group named to", "Allow group 'to' to read queues in tenancy",
			Statement{Subject: Subject{Groups: []string{"to"}}, Verb: VerbRead, ResourceType: ResourceQueues,
				Location: tenancy}},
		{"keywords case-insensitive, names case-sensitive",
			"ALLOW GROUP Admins TO MANAGE Queue-Family IN Compartment Prod WHERE Target.Queue.ID = 'Q1'",
			Statement{Subject: Subject{Groups: []string{"Admins"}}, Verb: VerbManage, ResourceType: ResourceQueueFamily,
				Location: Location{Path: []string{"Prod"}}, Condition: eq(VarTargetQueueID, "Q1")}},
		{"use queue-pull", "allow group G to use queue-pull in tenancy",
			Statement{Subject: Subject{Groups: []string{"G"}}, Verb: VerbUse, ResourceType: ResourceQueuePull, Location: tenancy}},
		{"compartments", "allow group G to read compartments in tenancy",
			Statement{Subject: Subject{Groups: []string{"G"}}, Verb: VerbRead, ResourceType: ResourceCompartments, Location: tenancy}},
		{"policies", "allow group G to inspect policies in tenancy",
			Statement{Subject: Subject{Groups: []string{"G"}}, Verb: VerbInspect, ResourceType: ResourcePolicies, Location: tenancy}},
		{"compartment name", "Allow group G to read queues in compartment Dev",
			Statement{Subject: Subject{Groups: []string{"G"}}, Verb: VerbRead, ResourceType: ResourceQueues,
				Location: Location{Path: []string{"Dev"}}}},
		{"compartment path", "Allow group G to read queues in compartment Eng:team_a.b:prod-1",
			Statement{Subject: Subject{Groups: []string{"G"}}, Verb: VerbRead, ResourceType: ResourceQueues,
				Location: Location{Path: []string{"Eng", "team_a.b", "prod-1"}}}},
		{"quoted compartment named id", "Allow group G to read queues in compartment 'id' : x",
			Statement{Subject: Subject{Groups: []string{"G"}}, Verb: VerbRead, ResourceType: ResourceQueues,
				Location: Location{Path: []string{"id", "x"}}}},
		{"compartment id", "Allow group G to read queues in compartment ID " + compartmentOCID,
			Statement{Subject: Subject{Groups: []string{"G"}}, Verb: VerbRead, ResourceType: ResourceQueues,
				Location: Location{ID: compartmentOCID}}},
		{"compartment id of the tenancy, quoted", "Allow group G to read queues in compartment id '" + tenancyOCID + "'",
			Statement{Subject: Subject{Groups: []string{"G"}}, Verb: VerbRead, ResourceType: ResourceQueues,
				Location: Location{ID: tenancyOCID}}},
		{"equal", "Allow any-user to use queue-push in tenancy where request.principal.id = 'alice@example.com'",
			Statement{Subject: Subject{AnyUser: true}, Verb: VerbUse, ResourceType: ResourceQueuePush, Location: tenancy,
				Condition: eq(VarRequestPrincipalID, "alice@example.com")}},
		{"not equal", "Allow any-user to read queues in tenancy where target.queue.name!='secret'",
			Statement{Subject: Subject{AnyUser: true}, Verb: VerbRead, ResourceType: ResourceQueues, Location: tenancy,
				Condition: ne(VarTargetQueueName, "secret")}},
		{"all", "Allow any-user to manage queues in tenancy where all {request.permission = 'QUEUE_PURGE', target.compartment.name = 'dev'}",
			Statement{Subject: Subject{AnyUser: true}, Verb: VerbManage, ResourceType: ResourceQueues, Location: tenancy,
				Condition: all(eq(VarRequestPermission, "QUEUE_PURGE"), eq(VarTargetCompartmentName, "dev"))}},
		{"any", "Allow any-user to manage queues in tenancy where ANY {request.operation='GetQueue', target.compartment.id = 'c1'}",
			Statement{Subject: Subject{AnyUser: true}, Verb: VerbManage, ResourceType: ResourceQueues, Location: tenancy,
				Condition: anyOf(eq(VarRequestOperation, "GetQueue"), eq(VarTargetCompartmentID, "c1"))}},
		{"nested", "Allow any-user to use queue-pull in tenancy where any {all {target.queue.id = 'q', target.consumergroup.id != 'cg'}, any {target.queue.name = \"n\"}}",
			Statement{Subject: Subject{AnyUser: true}, Verb: VerbUse, ResourceType: ResourceQueuePull, Location: tenancy,
				Condition: anyOf(all(eq(VarTargetQueueID, "q"), ne(VarTargetConsumerGroupID, "cg")), anyOf(eq(VarTargetQueueName, "n")))}},
		{"maximum nesting", "Allow any-user to read queues in tenancy where all{any{all{any{target.queue.id='q'}}}}",
			Statement{Subject: Subject{AnyUser: true}, Verb: VerbRead, ResourceType: ResourceQueues, Location: tenancy,
				Condition: all(anyOf(all(anyOf(eq(VarTargetQueueID, "q")))))}},
		{"whitespace and newlines", "  Allow\tgroup A\nto read queues in tenancy  ",
			Statement{Subject: Subject{Groups: []string{"A"}}, Verb: VerbRead, ResourceType: ResourceQueues, Location: tenancy}},
		{"unicode names", "Allow group 'Équipe ü' to read queues in compartment Straße",
			Statement{Subject: Subject{Groups: []string{"Équipe ü"}}, Verb: VerbRead, ResourceType: ResourceQueues,
				Location: Location{Path: []string{"Straße"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.text)
			require.NoError(t, err)
			tt.want.Text = tt.text
			requireStatementEqual(t, tt.want, got)

			// The canonical rendering parses back to the same statement.
			again, err := Parse(got.String())
			require.NoError(t, err, got.String())
			again.Text = tt.text
			requireStatementEqual(t, got, again)
		})
	}
}

func requireStatementEqual(t *testing.T, want, got Statement) {
	t.Helper()
	require.True(t, want.Condition.Equal(got.Condition), "condition: want %+v, got %+v", want.Condition, got.Condition)
	want.Condition, got.Condition = nil, nil
	require.Equal(t, want, got)
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		text    string
		column  int
		message string
	}{
		{"empty", "", 1, "expected 'allow', found end of statement"},
		{"blank", "   ", 1, "expected 'allow', found end of statement"},
		{"deny", "Deny group A to read queues in tenancy", 1, `expected 'allow', found "Deny"`},
		{"no subject", "Allow to read queues in tenancy", 7, `expected 'group' or 'any-user', found "to"`},
		{"group without name", "Allow group to read queues in tenancy", 13, `expected group name, found "to"`},
		{"empty group name", "Allow group '' to read queues in tenancy", 13, "empty group name"},
		{"comma without group", "Allow group A, B to read queues in tenancy", 16, `expected 'group' after ',', found "B"`},
		{"missing to", "Allow group A manage queues in tenancy", 15, `expected ',' or 'to', found "manage"`},
		{"missing to after any-user", "Allow any-user manage queues in tenancy", 16, `expected 'to', found "manage"`},
		{"unknown verb", "Allow group A to destroy queues in tenancy", 18, `unknown verb "destroy" (expected inspect, read, use or manage)`},
		{"missing verb", "Allow group A to", 17, "expected a verb (inspect, read, use or manage), found end of statement"},
		{"unknown resource type", "Allow group A to read buckets in tenancy", 23,
			`unknown resource type "buckets" (expected queues, queue-push, queue-pull, queue-metrics, queue-family, compartments, policies or all-resources)`},
		{"missing in", "Allow group A to read queues tenancy", 30, `expected 'in', found "tenancy"`},
		{"bad location", "Allow group A to read queues in region", 33, `expected 'tenancy' or 'compartment', found "region"`},
		{"compartment without a name", "Allow group A to read queues in compartment", 44,
			"expected compartment name or 'id', found end of statement"},
		{"compartment without a name, trailing spaces", "Allow group A to read queues in compartment   ", 44,
			"expected compartment name or 'id', found end of statement"},
		{"compartment followed by where", "Allow group A to read queues in compartment where target.queue.id = 'q'", 45,
			`expected compartment name or 'id', found "where"`},
		{"path ending in colon", "Allow group A to read queues in compartment A:", 47,
			"expected compartment name after ':', found end of statement"},
		{"bad OCID after id", "Allow group A to read queues in compartment id ocid1.queue.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 48,
			`invalid OCID "ocid1.queue.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": expected a compartment or tenancy OCID`},
		{"garbage OCID after id", "Allow group A to read queues in compartment id Prod", 48,
			`invalid OCID "Prod": expected a compartment or tenancy OCID`},
		{"nothing after id", "Allow group A to read queues in compartment id", 47,
			"expected a compartment OCID after 'id', found end of statement"},
		{"unterminated quote in group", "Allow group 'Queue Admins to read queues in tenancy", 13, "unterminated quoted string"},
		{"unterminated quote in value", "Allow any-user to read queues in tenancy where target.queue.id = 'q", 66, "unterminated quoted string"},
		{"unknown variable", "Allow any-user to read queues in tenancy where target.queue.ocid = 'q'", 48, `unknown variable "target.queue.ocid"`},
		{"missing =", "Allow any-user to read queues in tenancy where target.queue.id 'q'", 64,
			`expected '=' or '!=' after target.queue.id, found "'q'"`},
		{"lone !", "Allow any-user to read queues in tenancy where target.queue.id ! 'q'", 64, `unexpected character '!'`},
		{"unquoted value", "Allow any-user to read queues in tenancy where target.queue.id = q", 66, `expected a quoted value, found "q"`},
		{"missing condition", "Allow any-user to read queues in tenancy where", 47, "expected a condition, found end of statement"},
		{"all without brace", "Allow any-user to read queues in tenancy where all target.queue.id = 'q'", 52,
			`expected '{' after 'all', found "target.queue.id"`},
		{"empty all", "Allow any-user to read queues in tenancy where all {}", 53, `expected a condition, found "}"`},
		{"unclosed any", "Allow any-user to read queues in tenancy where any {target.queue.id = 'q'", 74,
			"expected ',' or '}', found end of statement"},
		{"too deep", "Allow any-user to read queues in tenancy where all{any{all{any{all{target.queue.id='q'}}}}}", 64,
			"conditions may nest at most 4 levels deep"},
		{"trailing garbage", "Allow group A to read queues in tenancy please", 41, `expected 'where' or end of statement, found "please"`},
		{"trailing garbage after condition", "Allow any-user to read queues in tenancy where target.queue.id = 'q' and", 70,
			`expected end of statement, found "and"`},
		{"unexpected character", "Allow group A; to read queues in tenancy", 14, `unexpected character ';'`},
		{"columns count runes", "Allow group 'Équipe' to réad queues in tenancy", 25, `unknown verb "réad" (expected inspect, read, use or manage)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.text)
			var perr *Error
			require.ErrorAs(t, err, &perr)
			require.Equal(t, &Error{Statement: 0, Column: tt.column, Message: tt.message}, perr)
		})
	}
}

func TestParseStatements(t *testing.T) {
	t.Parallel()

	got, err := ParseStatements([]string{
		"Allow group A to read queues in tenancy",
		"Allow any-user to inspect compartments in tenancy",
	})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "Allow any-user to inspect compartments in tenancy", got[1].Text)

	_, err = ParseStatements([]string{
		"Allow group A to read queues in tenancy",
		"Allow group A to read queues in tenancy",
		"Allow group A to frobnicate queues in tenancy",
	})
	require.EqualError(t, err, `statement 2, column 18: unknown verb "frobnicate" (expected inspect, read, use or manage)`)
	var perr *Error
	require.True(t, errors.As(err, &perr))
	require.Equal(t, 2, perr.Statement)

	got, err = ParseStatements(nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestStatementString(t *testing.T) {
	t.Parallel()
	s, err := Parse(`ALLOW group 'Queue Admins', group to-do, group "it's" TO Use queue-push IN compartment 'where':'a b' ` +
		`WHERE any {Request.Operation = 'PutMessages', target.queue.name != "x'y"}`)
	require.NoError(t, err)
	require.Equal(t, `Allow group 'Queue Admins', group to-do, group "it's" to use queue-push in compartment 'where':'a b' `+
		`where any {request.operation = 'PutMessages', target.queue.name != "x'y"}`, s.String())
	require.False(t, strings.Contains(s.String(), "Request"))
}
