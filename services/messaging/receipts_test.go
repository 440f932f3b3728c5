package messaging

import (
	"encoding/base64"
	"testing"

	"github.com/ferry-mq/ferry/persistence"
)

// A receipt carries its flags (DLQ, ordered) through the signature: they round-trip, and flipping one breaks it.
func TestReceiptFlags(t *testing.T) {
	r := NewReceipts([]byte("0123456789abcdef0123456789abcdef"))
	for _, rc := range []persistence.Receipt{
		{GroupNo: 3, ID: 42, LeaseID: 7},
		{GroupNo: 3, ID: 42, LeaseID: 7, DLQ: true},
		{GroupNo: 0, ID: 1 << 40, LeaseID: 1<<62 + 5, Ordered: true},
		{GroupNo: 9, ID: 8, LeaseID: 1, DLQ: true, Ordered: true},
	} {
		token := r.Encode("ocid1.queue.a", rc)
		got, err := r.Decode("ocid1.queue.a", token)
		if err != nil || got != rc {
			t.Fatalf("decode(%+v) = %+v, %v", rc, got, err)
		}
		if peek, ok := r.Peek(token); !ok || peek != rc {
			t.Fatalf("peek(%+v) = %+v, %v", rc, peek, ok)
		}
		if _, err := r.Decode("ocid1.queue.b", token); err == nil {
			t.Fatalf("a receipt of another queue decoded")
		}
		raw, _ := base64.RawURLEncoding.DecodeString(token)
		raw[1] ^= receiptOrdered // the flags byte
		if _, err := r.Decode("ocid1.queue.a", base64.RawURLEncoding.EncodeToString(raw)); err == nil {
			t.Fatalf("a receipt with changed flags decoded")
		}
	}
}
