package persistence

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/fault"
)

// ListLimitDefault and ListLimitMax bound list pages (DESIGN section 4).
const (
	ListLimitDefault = 100
	ListLimitMax     = 1000
)

// Page selects one page of a keyset-paginated list.
type Page struct {
	Limit      int
	SortByName bool   // sort by the name column instead of time_created
	Descending bool   // sortOrder DESC
	Token      string // opaque token from the previous page's opc-next-page ("" = first page)
}

// cursor is the position after the last row of a page, encoded into the opaque page token.
type cursor struct {
	Time time.Time `json:"t,omitempty"`
	Name string    `json:"n,omitempty"`
	ID   string    `json:"i"`
	Sort string    `json:"s"`
}

func (p Page) sortKey() string {
	key := "time"
	if p.SortByName {
		key = "name"
	}
	if p.Descending {
		return key + ":desc"
	}
	return key + ":asc"
}

// decode parses the page token; a token made for another sort order is rejected.
func (p Page) decode() (*cursor, error) {
	if p.Token == "" {
		return nil, nil
	}
	raw, err := DecodePageToken(p.Token)
	var c cursor
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	// The JSON may still spell a NUL as \u0000: the cursor's text goes into the keyset predicate.
	if err != nil || c.ID == "" || c.Sort != p.sortKey() || TextProblem(c.ID) != "" || TextProblem(c.Name) != "" {
		return nil, fault.InvalidParameter("page: invalid page token")
	}
	return &c, nil
}

func encodeCursor(c cursor) string {
	raw, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// keyset appends the ORDER BY, keyset predicate and LIMIT for a list over (timeCol|nameCol, idCol) to a query
// whose WHERE clause is already open, and returns the query and args.
func (p Page) keyset(query string, args []any, timeCol, nameCol, idCol string) (string, []any, error) {
	c, err := p.decode()
	if err != nil {
		return "", nil, err
	}
	col := timeCol
	if p.SortByName {
		col = nameCol
	}
	op, dir := ">", "ASC"
	if p.Descending {
		op, dir = "<", "DESC"
	}
	var b strings.Builder
	b.WriteString(query)
	if c != nil {
		var v any = c.Time
		if p.SortByName {
			v = c.Name
		}
		args = append(args, v, c.ID)
		fmt.Fprintf(&b, " AND (%s, %s) %s ($%d, $%d)", col, idCol, op, len(args)-1, len(args))
	}
	args = append(args, p.limit()+1)
	fmt.Fprintf(&b, " ORDER BY %s %s, %s %s LIMIT $%d", col, dir, idCol, dir, len(args))
	return b.String(), args, nil
}

func (p Page) limit() int {
	if p.Limit <= 0 {
		return ListLimitDefault
	}
	return min(p.Limit, ListLimitMax)
}

// trim cuts the extra row that keyset fetched and returns the next page token ("" on the last page).
func trim[T any](p Page, rows []T, position func(T) (time.Time, string, string)) ([]T, string) {
	if len(rows) <= p.limit() {
		return rows, ""
	}
	rows = rows[:p.limit()]
	t, name, id := position(rows[len(rows)-1])
	c := cursor{ID: id, Sort: p.sortKey()}
	if p.SortByName {
		c.Name = name
	} else {
		c.Time = t
	}
	return rows, encodeCursor(c)
}

// listPage runs a list query whose WHERE clause is open, adding the keyset predicate, order and limit, and returns
// one page and the next page token: the one shape every repository's List shares.
func listPage[T any](ctx context.Context, pool *pgxpool.Pool, op string, p Page, query string, args []any,
	timeCol, nameCol, idCol string, scan func(pgx.Row) (T, error), position func(T) (time.Time, string, string)) ([]T, string, error) {
	query, args, err := p.keyset(query, args, timeCol, nameCol, idCol)
	if err != nil {
		return nil, "", err
	}
	rows, err := pool.Query(ctx, query, args...)
	if err != nil {
		return nil, "", interpretError(op, err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
	if err != nil {
		return nil, "", interpretError(op, err)
	}
	list, next := trim(p, list, position)
	return list, next, nil
}

// lifecycleFilter restricts a list to one lifecycle state, or by default to every state but DELETED.
func lifecycleFilter(query string, args []any, state string) (string, []any) {
	if state == "" {
		return query + ` AND lifecycle_state <> 'DELETED'`, args
	}
	args = append(args, state)
	return query + ` AND lifecycle_state = $` + itoa(len(args)), args
}
