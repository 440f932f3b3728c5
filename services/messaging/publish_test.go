package messaging

import (
	"encoding/json"
	"testing"
)

// TestAppendMetadata: the stored metadata is what json.Marshal gave for the map of its non-empty fields.
func TestAppendMetadata(t *testing.T) {
	values := []string{"", "d", "<&>", "é\u2028", "bad\xff", `"quoted"`, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	for _, d := range values {
		for _, g := range values {
			for _, tp := range values {
				meta := map[string]string{}
				for k, v := range map[string]string{"deduplicationId": d, "messageGroupId": g, "traceparent": tp} {
					if v != "" {
						meta[k] = v
					}
				}
				var want []byte
				if len(meta) > 0 {
					want, _ = json.Marshal(meta)
				}
				if got := appendMetadata(nil, d, g, tp); string(got) != string(want) || (got == nil) != (want == nil) {
					t.Fatalf("%q %q %q: got %q, encoding/json %q", d, g, tp, got, want)
				}
			}
		}
	}
}
