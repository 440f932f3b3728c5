package persistence

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/services/apierror"
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
	raw, err := base64.RawURLEncoding.DecodeString(p.Token)
	var c cursor
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err != nil || c.ID == "" || c.Sort != p.sortKey() {
		return nil, apierror.InvalidParameter("page: invalid page token")
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
