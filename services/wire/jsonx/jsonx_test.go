package jsonx

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func check(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendString(nil, s); string(got) != string(want) {
		t.Fatalf("%q: got %s, encoding/json %s", s, got, want)
	}
}

// TestAppendString: every special character at every offset around the eight-byte steps.
func TestAppendString(t *testing.T) {
	specials := []string{`"`, `\`, "<", ">", "&", "\x00", "\x1f", "\b", "\f", "\n", "\r", "\t", "\x7f", " ", "\x80", "\xff",
		"é", "€", "😀", "\u2028", "\u2029", "\xe2\x80", "\xf0\x9f\x98"}
	for n := 0; n < 30; n++ {
		for p := 0; p <= n; p++ {
			for _, sp := range specials {
				check(t, strings.Repeat("a", p)+sp+strings.Repeat("b", n-p))
			}
		}
	}
	check(t, strings.Repeat("x", 1024))
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain text", `{"json":"<content>"}`, "\xff\xfe", "line\u2028sep"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat("x", 1024)
	buf := make([]byte, 0, 2048)
	b.SetBytes(int64(len(s)))
	b.Run("jsonx", func(b *testing.B) {
		for b.Loop() {
			buf = AppendString(buf[:0], s)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			buf, _ = json.Marshal(s)
		}
	})
}

// TestAppendFloat: the format switches, the exponent clean-up and the shortest representation, against
// encoding/json.
func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 40, 40.5, 0.1, 1e-6, 9.99e-7, 1e-7, 1.5e-9, 1e20, 1e21,
		-1e21, 123456789012345678, math.MaxFloat64, math.SmallestNonzeroFloat64, 1.0 / 3, 2.5e-300} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendFloat(nil, f); string(got) != string(want) {
			t.Fatalf("%v: got %s, encoding/json %s", f, got, want)
		}
	}
}

func FuzzAppendFloat(f *testing.F) {
	f.Add(1.0)
	f.Add(1e-7)
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		want, _ := json.Marshal(v)
		if got := AppendFloat(nil, v); string(got) != string(want) {
			t.Fatalf("%v: got %s, encoding/json %s", v, got, want)
		}
	})
}
