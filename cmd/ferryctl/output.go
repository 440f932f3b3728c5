package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"
)

// emit prints an answer's body in the chosen format. JSON is the API's own, indented: the same fields in the
// same order, so that scripts read what the API documents. An empty body (a 204) prints nothing.
func (a *app) emit(v view, body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if a.query != "" {
		return a.printQuery(body)
	}
	switch a.output {
	case "yaml":
		out, err := toYAML(body)
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(out)
		return err
	case "table":
		return v.render(a.stdout, body)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	out.WriteByte('\n')
	_, err := a.stdout.Write(out.Bytes())
	return err
}

// toYAML converts JSON to block-style YAML keeping the order of the fields: through yaml.Node, since YAML
// reads JSON and a node keeps its keys' order (a map would sort them).
func toYAML(body []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(body, &n); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %w", err)
	}
	var reset func(*yaml.Node)
	reset = func(n *yaml.Node) {
		n.Style = 0 // block style; strings that would read as another type are quoted by the encoder
		for _, c := range n.Content {
			reset(c)
		}
	}
	reset(&n)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	return out.Bytes(), enc.Close()
}

// printQuery prints the value at --query's path: strings as they are, other values as JSON, one per line.
func (a *app) printQuery(body []byte) error {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	values := []any{doc}
	for _, step := range strings.Split(a.query, ".") {
		key, each := strings.CutSuffix(step, "[]")
		var next []any
		for _, v := range values {
			if key != "" {
				m, _ := v.(map[string]any)
				v = m[key]
			}
			if each {
				list, _ := v.([]any)
				next = append(next, list...)
			} else {
				next = append(next, v)
			}
		}
		values = next
	}
	for _, v := range values {
		switch v := v.(type) {
		case nil:
			fmt.Fprintln(a.stdout)
		case string:
			fmt.Fprintln(a.stdout, v)
		default:
			out, err := json.Marshal(v)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s\n", out)
		}
	}
	return nil
}

// view is how -o table shows an answer: its rows and their columns.
type view struct {
	rows    func(doc any) []any // nil: the answer is one row
	columns []column
}

// column is one column of a table: a header and the dotted path of its value in a row.
type column struct {
	header string
	path   string             // "" is the row itself
	format func(v any) string // nil: cell
}

// listOf is the view of a list answer {"<key>": [rows]} with v's columns.
func (v view) listOf(key string) view {
	v.rows = func(doc any) []any {
		m, _ := doc.(map[string]any)
		list, _ := m[key].([]any)
		return list
	}
	return v
}

func (v view) render(w io.Writer, body []byte) error {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	rows := []any{doc}
	if v.rows != nil {
		rows = v.rows(doc)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	headers := make([]string, len(v.columns))
	for i, c := range v.columns {
		headers[i] = c.header
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, row := range rows {
		cells := make([]string, len(v.columns))
		for i, c := range v.columns {
			val := lookup(row, c.path)
			if c.format != nil {
				cells[i] = c.format(val)
			} else {
				cells[i] = cell(val)
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// lookup follows a dotted path through objects.
func lookup(v any, path string) any {
	if path == "" {
		return v
	}
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[key]
	}
	return v
}

// cell shows a value in a table cell: times to the second in UTC (a fixed width), lists joined with commas,
// objects as k=v, control characters escaped so that a row stays one line.
func cell(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil && len(v) >= len("2006-01-02T15:04:05Z") {
			return t.UTC().Format(time.RFC3339)
		}
		return oneLine(v)
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = cell(e)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		out, _ := json.Marshal(v)
		return oneLine(string(out))
	}
	return fmt.Sprint(v)
}

func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
}

// truncate shortens a cell to n characters (message contents can be 1 MiB).
func truncate(n int) func(any) string {
	return func(v any) string {
		s := []rune(cell(v))
		if len(s) <= n {
			return string(s)
		}
		return string(s[:n-1]) + "…"
	}
}
