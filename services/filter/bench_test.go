package filter

import "testing"

// benchExpr is close to MaxLength and exercises every kind of node: AND/OR chains, NOT, parentheses, string and
// number comparisons, quoted keys and both functions. With benchAttrs every OR falls through to its last term and
// every AND runs to its end, so Match visits the whole tree: the worst case for this expression.
const benchExpr = `:region = "eu-paris-1" AND (:tier >= 2 OR hasPrefix(:customer, "acme-")) AND NOT :test AND ` +
	`(:amount > 100.5 OR :currency != "USD") AND hasSuffix(:email, "@acme.com") AND ` +
	`(:priority <= 3 OR :"order.id" = 7) AND NOT (:status = "cancelled" OR :retries > 5)`

// benchAttrs is a typical message: ten attributes, as decoded from JSON (strings and float64).
func benchAttrs() map[string]any {
	return map[string]any{
		"region":   "eu-paris-1",
		"tier":     1.0,
		"customer": "acme-corp",
		"amount":   50.0,
		"currency": "EUR",
		"email":    "billing@acme.com",
		"priority": 5.0,
		"order.id": 7.0,
		"status":   "shipped",
		"retries":  2.0,
	}
}

func BenchmarkMatch256(b *testing.B) {
	if len(benchExpr) < MaxLength-10 || len(benchExpr) > MaxLength {
		b.Fatalf("benchExpr is %d bytes; keep it close to MaxLength", len(benchExpr))
	}
	f, err := Compile(benchExpr)
	if err != nil {
		b.Fatal(err)
	}
	attrs := benchAttrs()
	if !f.Match(attrs) {
		b.Fatal("benchExpr must match benchAttrs so that the whole tree is evaluated")
	}
	b.ReportAllocs()
	for b.Loop() {
		f.Match(attrs)
	}
}

func BenchmarkCompile256(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(benchExpr); err != nil {
			b.Fatal(err)
		}
	}
}
