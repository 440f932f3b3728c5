package wire

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/messaging"
)

// reference is how the handler built the GetMessages response before it was written by hand.
func reference(got []messaging.Delivered) api.GetMessages {
	out := api.GetMessages{Messages: make([]api.GetMessage, len(got))}
	for i, m := range got {
		msg := api.GetMessage{Id: m.ID, Content: m.Content, Receipt: m.Receipt, DeliveryCount: int(m.DeliveryCount),
			VisibleAfter: m.VisibleAt, ExpireAfter: m.ExpireAt, CreatedAt: m.TimeCreated}
		if len(m.Attributes) > 0 {
			var attrs api.MessageAttributes
			if err := json.Unmarshal(m.Attributes, &attrs); err != nil {
				panic(err)
			}
			msg.Attributes = &attrs
		}
		meta := api.MessageMetadata{}
		if m.ChannelID != "" {
			meta.ChannelId = &m.ChannelID
		}
		if m.Traceparent != "" {
			meta.Traceparent = &m.Traceparent
		}
		if m.MessageGroupID != "" {
			meta.MessageGroupId = &m.MessageGroupID
		}
		if len(m.CustomProperties) > 0 {
			var custom api.MessageCustomProperties
			if err := json.Unmarshal(m.CustomProperties, &custom); err != nil {
				panic(err)
			}
			meta.CustomProperties = &custom
		}
		if meta.ChannelId != nil || meta.Traceparent != nil || meta.MessageGroupId != nil || meta.CustomProperties != nil {
			msg.Metadata = &meta
		}
		if m.NegativeCode != nil {
			msg.LastNegative = &api.NegativeAcknowledgement{Code: *m.NegativeCode, Reason: m.NegativeText}
		}
		out.Messages[i] = msg
	}
	return out
}

func randomDelivered(r *rand.Rand, n int) []messaging.Delivered {
	texts := []string{"", "x", "plain", `{"json":"<b>&co</b>"}`, "line\nbreak\ttab", "é€😀", "\u2028\u2029", "bad\xffutf8", strings.Repeat("y", 1024)}
	pick := func() string { return texts[r.IntN(len(texts))] }
	out := make([]messaging.Delivered, n)
	for i := range out {
		t := time.Date(2026, 11, 30, r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(3)*r.IntN(1e9), time.UTC)
		d := messaging.Delivered{
			LeasedMessage: persistence.LeasedMessage{ID: r.Int64N(1 << 50), Content: pick(), DeliveryCount: int32(r.IntN(10)),
				VisibleAt: t, ExpireAt: t.Add(time.Duration(r.IntN(1e6)) * time.Millisecond), ChannelID: pick(),
				TimeCreated: t.Add(-time.Duration(r.IntN(1e9)) * time.Microsecond)},
			Receipt: pick(), Traceparent: pick(), MessageGroupID: pick(),
		}
		if r.IntN(3) == 0 {
			code := pick()
			d.NegativeCode = &code
			if r.IntN(2) == 0 {
				reason := pick()
				d.NegativeText = &reason
			}
		}
		if r.IntN(2) == 0 {
			// Attributes arrive as JSON, so their strings are valid UTF-8 (a decoder replaces invalid bytes).
			valid := func() string { return strings.ToValidUTF8(pick(), "\uFFFD") }
			attrs := map[string]any{}
			for k := range r.IntN(4) {
				if r.IntN(2) == 0 {
					attrs[fmt.Sprint("k", k, valid())] = valid()
				} else {
					attrs[fmt.Sprint("n", k)] = r.NormFloat64() * 1e6
				}
			}
			if len(attrs) > 0 { // stored as the publishing put encoded them (TestAttributesEncoding in messaging)
				d.Attributes, _ = json.Marshal(attrs)
			}
		}
		if r.IntN(2) == 0 {
			valid := func() string { return strings.ToValidUTF8(pick(), "\uFFFD") }
			custom := map[string]string{}
			for k := range 1 + r.IntN(3) {
				custom[fmt.Sprint("c", k, valid())] = valid()
			}
			// Stored as the publishing put encoded them (TestAppendMetadata in messaging).
			d.CustomProperties, _ = json.Marshal(custom)
		}
		out[i] = d
	}
	return out
}

// TestGetMessagesEncoding: the hand-written response is byte-for-byte encoding/json's.
func TestGetMessagesEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 500; round++ {
		got := randomDelivered(r, r.IntN(33))
		want, err := json.Marshal(reference(got))
		if err != nil {
			t.Fatal(err)
		}
		if body := AppendGetMessages(nil, got); string(body) != string(want) {
			t.Fatalf("hand-written\n%s\nencoding/json\n%s", body, want)
		}
	}
}

// BenchmarkGetMessagesEncoding: 32 messages of 1 KiB, by hand against encoding/json.
func BenchmarkGetMessagesEncoding(b *testing.B) {
	got := make([]messaging.Delivered, 32)
	now := time.Now().UTC()
	for i := range got {
		got[i] = messaging.Delivered{LeasedMessage: persistence.LeasedMessage{ID: int64(i), Content: strings.Repeat("x", 1024),
			VisibleAt: now, ExpireAt: now, DeliveryCount: 1}, Receipt: strings.Repeat("r", 120),
			Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 64<<10)
		for b.Loop() {
			buf = AppendGetMessages(buf[:0], got)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(reference(got))
		}
	})
}

// TestPutAndDeleteResultsEncoding: the hand-written PutMessages and DeleteMessages results are encoding/json's,
// and a failed entry's errorCode is the HTTP status its failure answers alone.
func TestPutAndDeleteResultsEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 300; round++ {
		results := make([]persistence.PutResult, r.IntN(21))
		for i := range results {
			if r.IntN(5) > 0 { // else discarded: the zero result
				results[i] = persistence.PutResult{ID: r.Int64N(1 << 50), Groups: r.IntN(4),
					ExpireAt: time.Date(2026, 12, r.IntN(28)+1, r.IntN(24), 0, 0, r.IntN(3)*r.IntN(1e9), time.UTC)}
			}
		}
		put := api.PutMessages{Messages: make([]api.PutMessagesResultEntry, len(results))}
		for i, res := range results {
			groups := res.Groups
			put.Messages[i] = api.PutMessagesResultEntry{Id: res.ID, ExpireAfter: res.ExpireAt, ConsumerGroups: &groups}
		}
		want, _ := json.Marshal(put)
		if got := AppendPutMessages(nil, results); string(got) != string(want) {
			t.Fatalf("PutMessages: hand-written\n%s\nencoding/json\n%s", got, want)
		}

		errs := make([]messaging.EntryError, r.IntN(21))
		for i := range errs {
			switch r.IntN(5) {
			case 1:
				errs[i] = fault.Conflict("receipt: <stale> & \"gone\"")
			case 2:
				errs[i] = fault.Unavailable(1, "é") // a server-side failure
			case 3:
				errs[i] = fault.NotFound("receipt: the message is gone")
			case 4:
				errs[i] = fault.InvalidParameter("receipt: malformed")
			}
		}
		del := api.DeleteMessagesResult{Entries: make([]api.DeleteMessagesResultEntry, len(errs))}
		for i, entryErr := range errs {
			if entryErr != nil {
				e := apierror.From(entryErr)
				del.Entries[i] = api.DeleteMessagesResultEntry{Code: &e.Code, ErrorCode: &e.Status, ErrorMessage: &e.Message}
				CountFailure(e, &del.ClientFailures, &del.ServerFailures)
			}
		}
		want, _ = json.Marshal(del)
		got := AppendEntryResults(nil, errs)
		if string(got) != string(want) {
			t.Fatalf("DeleteMessages: hand-written\n%s\nencoding/json\n%s", got, want)
		}
		var back api.DeleteMessagesResult
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		for i, e := range back.Entries {
			wantStatus := 0 // a success has none
			if errs[i] != nil {
				switch apierror.From(errs[i]).Code {
				case "Conflict":
					wantStatus = 409
				case "ServiceUnavailable":
					wantStatus = 503
				case "NotAuthorizedOrNotFound":
					wantStatus = 404
				case "InvalidParameter":
					wantStatus = 400
				}
			}
			if got := deref(e.ErrorCode); got != wantStatus {
				t.Fatalf("entry %d (%v): errorCode %d, want %d", i, errs[i], got, wantStatus)
			}
		}
	}
}

// TestDeleteAndGetMessagesEncoding: the hand-written DeleteAndGetMessages answer is encoding/json's.
func TestDeleteAndGetMessagesEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 200; round++ {
		got := randomDelivered(r, r.IntN(33))
		errs := make([]messaging.EntryError, 1+r.IntN(32))
		del := api.DeleteMessagesResult{Entries: make([]api.DeleteMessagesResultEntry, len(errs))}
		for i := range errs {
			if r.IntN(3) == 0 {
				errs[i] = fault.Conflict("receipt: the lease expired")
				e := apierror.From(errs[i])
				del.Entries[i] = api.DeleteMessagesResultEntry{Code: &e.Code, ErrorCode: &e.Status, ErrorMessage: &e.Message}
				CountFailure(e, &del.ClientFailures, &del.ServerFailures)
			}
		}
		want, err := json.Marshal(api.DeleteAndGetMessagesResult{Deleted: del, Messages: reference(got).Messages})
		if err != nil {
			t.Fatal(err)
		}
		if body := AppendDeleteAndGetMessages(nil, got, errs); string(body) != string(want) {
			t.Fatalf("hand-written\n%s\nencoding/json\n%s", body, want)
		}
	}
}
