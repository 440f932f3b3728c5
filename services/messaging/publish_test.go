package messaging

import (
	"encoding/json"
	"testing"
)

// TestAppendMetadata: the stored metadata is what json.Marshal gave for the map of its non-empty fields, custom
// properties a nested object (GetMessages hands them on as they are stored).
func TestAppendMetadata(t *testing.T) {
	values := []string{"", "d", "<&>", "é\u2028", "bad\xff", `"quoted"`, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	customs := []map[string]string{nil, {}, {"a": "b"}, {"<&>": "é\u2028", "z": "", `"q"`: `"v"`, "b": "x"}}
	for _, custom := range customs {
		for _, d := range values {
			for _, g := range values {
				for _, tp := range values {
					meta := map[string]any{}
					for k, v := range map[string]string{"deduplicationId": d, "messageGroupId": g, "traceparent": tp} {
						if v != "" {
							meta[k] = v
						}
					}
					if len(custom) > 0 {
						meta["customProperties"] = custom
					}
					var want []byte
					if len(meta) > 0 {
						want, _ = json.Marshal(meta)
					}
					if got := appendMetadata(nil, custom, d, g, tp); string(got) != string(want) || (got == nil) != (want == nil) {
						t.Fatalf("%v %q %q %q: got %q, encoding/json %q", custom, d, g, tp, got, want)
					}
				}
			}
		}
	}
}

// TestAttributesEncoding: stored attributes are what json.Marshal gave for the attribute map (they are handed to
// consumers as they are, so GetMessages answers what encoding/json would).
func TestAttributesEncoding(t *testing.T) {
	cases := []map[string]any{
		{"a": "x"},
		{"b": 1.0, "a": -0.5, "c": 1e21, "d": 1e-7, "e": 123456789.125},
		{"<&>": "é\u2028", "bad\xff": "bad\xff", `"q"`: `"v"`, "n": json.Number("40.0")},
		{"z": "", "y": 0.0},
	}
	for _, attrs := range cases {
		normal := map[string]any{}
		for k, v := range attrs {
			if n, ok := v.(json.Number); ok {
				f, _ := n.Float64()
				v = f
			}
			normal[k] = v
		}
		want, _ := json.Marshal(normal)
		if got := appendAttributes(nil, attrs); string(got) != string(want) {
			t.Fatalf("%v: got %s, encoding/json %s", attrs, got, want)
		}
	}
}
