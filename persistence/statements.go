package persistence

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The data plane's SQL lives in sql/<area>/*.sql (messages, metrics), one file per concern, each statement a section that starts
// with a line "-- name: NAME" and reads top to bottom with the comments that explain it. Parameters are named
// (@queue_no). Every statement is compiled once, when the package initialises, into the one text PostgreSQL
// receives for it — pgx caches prepared statements by that text, and the lease relies on its cached generic plan
// — so nothing is parsed per call: a call site binds its arguments by name through the compiled parameter list
// (statement.bind), which is a few comparisons of short strings, not pgx.NamedArgs' re-lexing of the SQL on
// every call. testdata/statements.golden.sql holds every compiled statement, for review.
//
//go:embed sql/*/*.sql
var sqlFiles embed.FS

// sqlTemplates names the files that are text/template templates, and the variants to render: lease.sql's render
// one section each; ack.sql renders once, its fragments shared by several statements. The other files are plain SQL.
var sqlTemplates = map[string][]any{"lease.sql": leaseVariantData(), "ack.sql": {nil}}

// statements holds every compiled statement by name, statementNames their names in file and section order.
var statements, statementNames = mustLoadStatements()

// statement is one compiled statement.
type statement struct {
	name string
	// sql is the text PostgreSQL receives: the tag "-- NAME" (the tracer names the span after it), then the
	// statement without comments and blank lines, its parameters numbered $1… by first appearance.
	sql string
	// params holds the parameters' names: params[k] is $(k+1).
	params []string
	// byPartition, for a statement marked partitionMarker, holds its text on each partition of the message tables
	// (messages_k and message_bodies_k in place of messages and message_bodies): it runs the one of its
	// @queue_no (text).
	byPartition []string
}

// partitionMarker, the first line of a statement's section, says that the statement reads and writes one queue's
// messages only (every row of messages and message_bodies it touches is of @queue_no): it is sent naming that
// queue's partitions instead of the partitioned tables. Planning and starting a statement on a partitioned table
// costs PostgreSQL 15 every partition (a generic plan is built for all eight and locks them all at each
// execution, past the 16 locks a backend takes without the shared lock table): the same drain on the partitioned
// tables cost PostgreSQL 1.23× the CPU per message of one on the named partitions (BenchmarkConsumeAB,
// docs/benchmarks.md), and a generic plan of the cursor lease takes a fifth of the time to plan again when vacuum
// invalidates it.
const partitionMarker = "-- runs on the partition of @queue_no"

// messageTables matches the names of the partitioned message tables in a compiled statement.
var messageTables = regexp.MustCompile(`\b(messages|message_bodies)\b`)

// text is the SQL sent for a call with args: the statement on the partition of its queue when it has one.
func (s *statement) text(args []arg) string {
	if s.byPartition != nil {
		for _, a := range args {
			if a.name == "queue_no" {
				if no, ok := a.value.(int64); ok {
					return s.byPartition[messagePartition(no)]
				}
			}
		}
	}
	return s.sql
}

// on is the SQL sent for a call on the queue queueNo.
func (s *statement) on(queueNo int64) string { return s.text([]arg{{"queue_no", queueNo}}) }

// arg is one argument of a statement, by the name of its parameter.
type arg struct {
	name  string
	value any
}

// bind orders args as the statement's parameters. Every parameter needs exactly one argument, and every argument
// must name a parameter: a mismatch is a programming error, and panics, at the call site's first run (every one
// runs in the tests). Call sites pass the arguments in the parameters' order where they can, which costs one
// comparison each; no allocation but the slice handed to pgx, as before there were names.
func (s *statement) bind(args ...arg) []any {
	out := make([]any, len(s.params))
	var seen uint64
	for i, a := range args {
		k := i
		if k >= len(s.params) || s.params[k] != a.name {
			k = s.index(a.name)
		}
		if seen&(1<<k) != 0 {
			panic(fmt.Sprintf("persistence: statement %s: argument @%s given twice", s.name, a.name))
		}
		seen |= 1 << k
		out[k] = a.value
	}
	if seen != 1<<len(s.params)-1 {
		for k, p := range s.params {
			if seen&(1<<k) == 0 {
				panic(fmt.Sprintf("persistence: statement %s: no argument for @%s", s.name, p))
			}
		}
	}
	return out
}

// index is the position of the parameter name; it panics when the statement has none of that name.
func (s *statement) index(name string) int {
	for k, p := range s.params {
		if p == name {
			return k
		}
	}
	panic(fmt.Sprintf("persistence: statement %s has no parameter @%s", s.name, name))
}

// querier runs statements: the pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *statement) exec(ctx context.Context, q querier, args ...arg) (pgconn.CommandTag, error) {
	return q.Exec(ctx, s.text(args), s.bind(args...)...)
}

func (s *statement) query(ctx context.Context, q querier, args ...arg) (pgx.Rows, error) {
	return q.Query(ctx, s.text(args), s.bind(args...)...)
}

func (s *statement) queryRow(ctx context.Context, q querier, args ...arg) pgx.Row {
	return q.QueryRow(ctx, s.text(args), s.bind(args...)...)
}

func (s *statement) queue(batch *pgx.Batch, args ...arg) *pgx.QueuedQuery {
	return batch.Queue(s.text(args), s.bind(args...)...)
}

// stmt is the compiled statement of that name; a name without one panics when the package initialises.
func stmt(name string) *statement {
	s, ok := statements[name]
	if !ok {
		panic("persistence: no SQL statement named " + name)
	}
	return s
}

func mustLoadStatements() (map[string]*statement, []string) {
	byName, names, err := loadStatements(sqlFiles)
	if err != nil {
		panic("persistence: " + err.Error())
	}
	return byName, names
}

// loadStatements compiles every section of every SQL file of fsys (of every variant, for templates).
func loadStatements(fsys fs.FS) (map[string]*statement, []string, error) {
	files, err := fs.Glob(fsys, "sql/*/*.sql") // in lexical order: messages before metrics
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]*statement{}
	var names []string
	for _, file := range files {
		base := path.Base(file)
		src, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, nil, err
		}
		texts := []string{string(src)}
		if variants, ok := sqlTemplates[base]; ok {
			tmpl, err := template.New(base).Option("missingkey=error").Parse(string(src))
			if err != nil {
				return nil, nil, err
			}
			texts = texts[:0]
			for _, v := range variants {
				var buf bytes.Buffer
				if err := tmpl.Execute(&buf, v); err != nil {
					return nil, nil, err
				}
				texts = append(texts, buf.String())
			}
		}
		for _, text := range texts {
			sections, err := splitSections(text)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			}
			for _, sec := range sections {
				sql, params, err := compileSQL(sec.body)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %s: %w", file, sec.name, err)
				}
				if _, dup := byName[sec.name]; dup {
					return nil, nil, fmt.Errorf("%s: statement %s defined twice", file, sec.name)
				}
				if len(params) > 64 {
					return nil, nil, fmt.Errorf("%s: %s: more than 64 parameters", file, sec.name)
				}
				st := &statement{name: sec.name, sql: "-- " + sec.name + "\n" + sql, params: params}
				if sec.partitioned {
					if !slices.Contains(params, "queue_no") || !messageTables.MatchString(sql) {
						return nil, nil, fmt.Errorf("%s: %s: marked %q without @queue_no or the message tables", file, sec.name, partitionMarker)
					}
					for k := range messagePartitions {
						st.byPartition = append(st.byPartition,
							"-- "+sec.name+"\n"+messageTables.ReplaceAllString(sql, fmt.Sprintf("${1}_%d", k)))
					}
				}
				byName[sec.name] = st
				names = append(names, sec.name)
			}
		}
	}
	return byName, names, nil
}

// section is one named statement of a SQL file, as written; partitioned when its first line is partitionMarker.
type section struct {
	name, body  string
	partitioned bool
}

const sectionMarker = "-- name: "

// splitSections cuts a file at its "-- name: NAME" lines. What precedes the first one may be comments only.
func splitSections(src string) ([]section, error) {
	var out []section
	lines := strings.SplitAfter(src, "\n")
	start, name := 0, ""
	flush := func(end int) error {
		body := strings.Join(lines[start:end], "")
		if name == "" {
			if sql, _, err := compileSQL(body); err != nil || sql != "" {
				return fmt.Errorf("SQL before the first %q line", strings.TrimSpace(sectionMarker))
			}
			return nil
		}
		first, _, _ := strings.Cut(body, "\n")
		out = append(out, section{name: name, body: body, partitioned: strings.TrimSpace(first) == partitionMarker})
		return nil
	}
	for i, line := range lines {
		if rest, ok := strings.CutPrefix(line, sectionMarker); ok {
			if err := flush(i); err != nil {
				return nil, err
			}
			start, name = i+1, strings.TrimSpace(rest)
			if name == "" || strings.ContainsAny(name, " \t") {
				return nil, fmt.Errorf("line %d: bad statement name %q", i+1, name)
			}
		}
	}
	if err := flush(len(lines)); err != nil {
		return nil, err
	}
	return out, nil
}

// compileSQL turns one named-parameter statement into the text sent: comments, blank lines, trailing blanks and
// a final semicolon dropped, and each @name replaced by $k, numbered by first appearance (params[k-1] = name).
// It knows PostgreSQL's lexical structure as far as these statements use it — string literals, quoted
// identifiers, -- and (nested) /* */ comments — and refuses what it does not handle: positional parameters,
// dollar quoting, a literal that spans lines, and more than one statement. An @ that does not start an
// identifier (the operators @, @>, <@) is left as it is.
func compileSQL(src string) (string, []string, error) {
	var b strings.Builder
	var params []string
	number := map[string]int{}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for ; j < len(src); j++ {
				if src[j] == '\n' {
					return "", nil, fmt.Errorf("a quoted literal spans lines")
				}
				if src[j] == c {
					if j+1 < len(src) && src[j+1] == c { // doubled: the quote itself
						j++
						continue
					}
					break
				}
			}
			if j == len(src) {
				return "", nil, fmt.Errorf("unterminated quoted literal")
			}
			b.WriteString(src[i : j+1])
			i = j + 1
		case strings.HasPrefix(src[i:], "--"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				j = len(src) - i
			}
			i += j
		case strings.HasPrefix(src[i:], "/*"):
			depth, j := 1, i+2
			for ; j < len(src) && depth > 0; j++ {
				switch {
				case strings.HasPrefix(src[j:], "/*"):
					depth, j = depth+1, j+1
				case strings.HasPrefix(src[j:], "*/"):
					depth, j = depth-1, j+1
				}
			}
			if depth > 0 {
				return "", nil, fmt.Errorf("unterminated comment")
			}
			i = j
		case c == '$':
			return "", nil, fmt.Errorf("positional parameter or dollar quoting at %q: name parameters (@name)", excerpt(src, i))
		case c == ';':
			if strings.TrimSpace(stripComments(src[i+1:])) != "" {
				return "", nil, fmt.Errorf("more than one statement")
			}
			i = len(src)
		case c == '@' && i+1 < len(src) && isIdentStart(src[i+1]):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			name := src[i+1 : j]
			k, ok := number[name]
			if !ok {
				params = append(params, name)
				k = len(params)
				number[name] = k
			}
			fmt.Fprintf(&b, "$%d", k)
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	var out []string
	for line := range strings.SplitSeq(b.String(), "\n") {
		if line = strings.TrimRight(line, " \t\r"); strings.TrimSpace(line) != "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n"), params, nil
}

// stripComments is what compileSQL leaves of text after a semicolon, which must be nothing.
func stripComments(s string) string {
	sql, _, err := compileSQL(strings.ReplaceAll(s, ";", ""))
	if err != nil {
		return s
	}
	return sql
}

func excerpt(s string, i int) string {
	return s[i:min(len(s), i+12)]
}

func isIdentStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || '0' <= c && c <= '9'
}
