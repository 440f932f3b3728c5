package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestScannerStrings: a special byte at every offset of strings around the scanner's eight-byte steps.
func TestScannerStrings(t *testing.T) {
	for n := 0; n < 40; n++ {
		for p := 0; p < n; p++ {
			for _, special := range []string{`"`, `\\`, "\x00", "\x1f", "\x7f", "\x80", "\xff", "é", "\u2028", "€"} {
				text := []byte(strings.Repeat("a", n))
				text = append(text[:p], append([]byte(special), text[p+1:]...)...)
				for _, lit := range [][]byte{append(append([]byte(`"`), text...), '"'), mustMarshal(t, string(text))} {
					s := scanner{b: lit}
					got, ok := s.str()
					var want string
					if ok {
						if err := json.Unmarshal(lit[:s.i], &want); err != nil || got != want || strings.ContainsRune(got, 0) {
							t.Fatalf("%q: scanned %q up to %d, encoding/json %q, %v", lit, got, s.i, want, err)
						}
					} else if json.Unmarshal(lit, &want) == nil && utf8.Valid(lit) && !bytes.Contains(lit, []byte(`\u0000`)) {
						t.Fatalf("%q: refused a valid string", lit)
					}
				}
			}
		}
	}
}

func mustMarshal(t *testing.T, s string) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScannerBadText: escaped strings that encoding/json would silently change are left to the validator, which
// refuses them; their valid neighbours are decoded.
func TestScannerBadText(t *testing.T) {
	for lit, valid := range map[string]bool{
		`"\ud83d\ude00"`: true, `"\ufffd"`: true, `"\\ud800"`: true, `"\u00e9\n"`: true,
		`"\ud800"`: false, `"\udc00\ud800"`: false, `"x\ud83d"`: false, `"\u0000"`: false, "\"\\n\xff\"": false,
		"\"\\n\xc0\x80\"": false,
	} {
		s := scanner{b: []byte(lit)}
		_, ok := s.str()
		if ok != valid {
			t.Errorf("%s: accepted %v, want %v", lit, ok, valid)
		}
	}
}
