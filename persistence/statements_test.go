package persistence

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/statements.golden.sql from the compiled statements")

const goldenStatements = "testdata/statements.golden.sql"

// Every statement the data plane runs, as PostgreSQL receives it, is in testdata/statements.golden.sql: a change
// to one shows in review. go test ./persistence -run TestStatementsGolden -update rewrites the file.
func TestStatementsGolden(t *testing.T) {
	var b strings.Builder
	b.WriteString("-- Every statement of the data plane as PostgreSQL receives it (the positional text compiled from\n" +
		"-- sql/messages/*.sql when the package initialises), with the named parameter behind each $k. Generated:\n" +
		"-- go test ./persistence -run TestStatementsGolden -update\n")
	for _, c := range []struct{ name, sql string }{{"asyncCommit", asyncCommit}, {"genericPlans", genericPlans},
		{"genericPlansAsync", genericPlansAsync}, {"leaseCommit", leaseCommit}} {
		fmt.Fprintf(&b, "\n-- %s (a Go constant, messages.go)\n%s;\n", c.name, c.sql)
	}
	for _, name := range statementNames {
		s := statements[name]
		var params []string
		for k, p := range s.params {
			params = append(params, fmt.Sprintf("$%d @%s", k+1, p))
		}
		if len(params) == 0 {
			params = []string{"no parameters"}
		}
		b.WriteString("\n")
		if s.byPartition != nil {
			b.WriteString("-- sent on messages_k and message_bodies_k, k the partition of @queue_no\n")
		}
		fmt.Fprintf(&b, "-- %s\n%s;\n", strings.Join(params, ", "), s.sql)
	}
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(goldenStatements, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(goldenStatements)
	require.NoError(t, err, "go test ./persistence -run TestStatementsGolden -update writes it")
	require.Equal(t, string(want), b.String(), "a statement changed: rerun with -update and review the diff")
}

// named is the statement's text with each $k replaced by its parameter's name again, so that statements with
// different numberings compare.
func (s *statement) named() string {
	return regexp.MustCompile(`\$(\d+)`).ReplaceAllStringFunc(s.sql, func(m string) string {
		var k int
		_, _ = fmt.Sscanf(m, "$%d", &k)
		return "@" + s.params[k-1]
	})
}

// The CTEs that unblock the next message of ordered groups are written out in each statement that runs them
// (so that each reads top to bottom); they must not drift apart.
func TestUnblockNextIsTheSameEverywhere(t *testing.T) {
	cte := regexp.MustCompile(`(?s)next_up AS MATERIALIZED \(.*?RETURNING m\.group_no, m\.id\n\)`)
	want := cte.FindString(stmt("messages.delete_ordered").named())
	require.NotEmpty(t, want)
	users := 0
	for _, name := range statementNames {
		if s := statements[name]; strings.Contains(s.sql, "next_up") {
			require.Equal(t, want, cte.FindString(s.named()), name)
			users++
		}
	}
	require.Equal(t, 7, users, "messages.delete_ordered, messages.unblock_groups and five dead-lettering leases")
}

func TestCompileSQL(t *testing.T) {
	sql, params, err := compileSQL(`-- a comment, @not_a_parameter
SELECT @b, '@not -- either', "col@x" /* a /* nested */ @comment */, @a::int[],   -- trailing @comment
	x @> y, @ x, @b + 1  ;
-- after the statement
`)
	require.NoError(t, err)
	require.Equal(t, "SELECT $1, '@not -- either', \"col@x\" , $2::int[],\n\tx @> y, @ x, $1 + 1", sql)
	require.Equal(t, []string{"b", "a"}, params)

	for src, why := range map[string]string{
		"SELECT $1":               "positional parameter",
		"SELECT $$x$$":            "dollar quoting",
		"SELECT 1; SELECT 2":      "more than one statement",
		"SELECT 'a\nb'":           "a quoted literal spans lines",
		"SELECT 'a":               "unterminated quoted literal",
		"SELECT 1 /* never ended": "unterminated comment",
	} {
		_, _, err := compileSQL(src)
		require.ErrorContains(t, err, why, src)
	}
}

func TestSplitSections(t *testing.T) {
	secs, err := splitSections("-- header\n\n-- name: a.one\nSELECT 1;\n-- name: a.two\n-- why\nSELECT 2;\n" +
		"-- name: a.three\n" + partitionMarker + "\nSELECT 3;\n")
	require.NoError(t, err)
	require.Equal(t, []section{{"a.one", "SELECT 1;\n", false}, {"a.two", "-- why\nSELECT 2;\n", false},
		{"a.three", partitionMarker + "\nSELECT 3;\n", true}}, secs)
	_, err = splitSections("SELECT 0;\n-- name: a.one\nSELECT 1;\n")
	require.Error(t, err, "SQL before the first section")
}

// A statement marked partitionMarker is sent on its queue's partitions of the message tables, its other tables
// and its tag as they are; one unmarked is sent as written.
func TestStatementOnPartition(t *testing.T) {
	for no := range int64(20) {
		k := messagePartition(no)
		got := messagesDeleteBodies.on(no)
		require.True(t, strings.HasPrefix(got, "-- messages.delete_bodies\n"), got)
		require.Contains(t, got, fmt.Sprintf("DELETE FROM message_bodies_%d b", k))
		require.Contains(t, got, fmt.Sprintf("SELECT 1 FROM messages_%d m", k))
		require.NotRegexp(t, `\bmessages\b|\bmessage_bodies\b`, strings.TrimPrefix(got, "-- messages.delete_bodies\n"))
		require.Equal(t, got, messagesDeleteBodies.text([]arg{{"ids", []int64{1}}, {"queue_no", no}}))
	}
	lease := leaseStatement(pickCursor, false).on(3)
	require.Contains(t, lease, "message_cursors c")
	require.Contains(t, lease, "message_ranges (")
	require.Equal(t, messagesLeaseLock.sql, messagesLeaseLock.on(3), "the lock touches no message table")
	_, _, err := loadStatements(fstest.MapFS{"sql/x/bad.sql": {Data: []byte("-- name: x.bad\n" + partitionMarker + "\nSELECT 1 FROM messages;\n")}})
	require.ErrorContains(t, err, "without @queue_no")
}

// bind puts each argument at its parameter's position whatever the order given, and refuses a missing, an
// unknown or a repeated argument.
func TestBind(t *testing.T) {
	s := &statement{name: "t", params: []string{"a", "b", "c"}}
	require.Equal(t, []any{1, 2, 3}, s.bind(arg{"a", 1}, arg{"b", 2}, arg{"c", 3}))
	require.Equal(t, []any{1, 2, nil}, s.bind(arg{"c", nil}, arg{"a", 1}, arg{"b", 2}))
	require.PanicsWithValue(t, "persistence: statement t: no argument for @b", func() { s.bind(arg{"a", 1}, arg{"c", 3}) })
	require.PanicsWithValue(t, "persistence: statement t has no parameter @d", func() {
		s.bind(arg{"a", 1}, arg{"b", 2}, arg{"c", 3}, arg{"d", 4})
	})
	require.PanicsWithValue(t, "persistence: statement t: argument @a given twice", func() {
		s.bind(arg{"a", 1}, arg{"a", 2}, arg{"c", 3})
	})
}

// Every call site binds its statement's parameters: the statements' tests run them all, and here each lease
// variant's (selected by lease and LeaseAsConsumer) has the parameters those bind.
func TestLeaseVariantsParameters(t *testing.T) {
	common := []string{"queue_no", "group_no", "channels", "dlq", "limit", "max_deliveries", "visibility_seconds", "lease_id"}
	for pick := range leasePicks {
		for _, dl := range []bool{false, true} {
			s := leaseStatement(pick, dl)
			want := append(append([]string{}, common...), [...][]string{{"owner"}, {"owner"}, {"owners"}, {"queue_id", "consumer"}, {"owner"}}[pick]...)
			require.ElementsMatch(t, want, s.params, s.name)
			require.Equal(t, dl, strings.HasSuffix(s.name, "_dead_letter"), s.name)
			require.True(t, strings.HasPrefix(s.sql, "-- "+s.name+"\n"), s.name)
		}
	}
}

// BenchmarkBind measures binding the lease's nine arguments by name, as lease gives them (in the order of the
// single-channel statement's parameters, the common case; the multi-channel statement's differ), against the
// positional []any it replaces: the same allocations, for the slice handed to pgx and the boxed integers.
//
//	go test -run '^$' -bench Bind -benchmem ./persistence/
func BenchmarkBind(b *testing.B) {
	channels := []string{"a"}
	var sink []any
	for _, pick := range []leasePick{pickOne, pickChannels} {
		s := leaseStatement(pick, true)
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				sink = s.bind(arg{"queue_no", int64(i)}, arg{"group_no", int32(0)}, arg{"dlq", false}, arg{"channels", channels},
					arg{"limit", 32}, arg{"max_deliveries", int32(5)}, arg{"visibility_seconds", int32(30)},
					arg{"lease_id", int64(i)}, arg{"owner", (*string)(nil)})
			}
		})
	}
	b.Run("positional", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			sink = []any{int64(i), int32(0), channels, false, 32, int32(5), int32(30), int64(i), (*string)(nil)}
		}
	})
	_ = sink
}
