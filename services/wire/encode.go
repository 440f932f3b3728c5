package wire

import (
	"strconv"
	"time"

	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/messaging"
	"github.com/ferry-mq/ferry/services/wire/jsonx"
)

// The hot responses (GetMessages carries up to 32 message bodies of up to 256 KiB, and a watch's message frames
// the same shape) are written by hand into the caller's buffer instead of through encoding/json's reflection.
// The bytes are those json.Marshal gives for the generated api types the handlers used to build
// (TestGetMessagesEncoding, TestPutAndDeleteResultsEncoding).

// AppendPutMessages appends the PutMessages result: json.Marshal of api.PutMessages with every entry's
// consumerGroups set.
func AppendPutMessages(b []byte, results []persistence.PutResult) []byte {
	b = append(b, `{"messages":[`...)
	for i, r := range results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"consumerGroups":`...)
		b = strconv.AppendInt(b, int64(r.Groups), 10)
		b = append(b, `,"expireAfter":`...)
		b = appendTime(b, r.ExpireAt)
		b = append(b, `,"id":`...)
		b = strconv.AppendInt(b, r.ID, 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// AppendEntryResults appends a DeleteMessagesResult: json.Marshal of api.DeleteMessagesResult, an empty object
// for each entry that succeeded, and for each failed one OCI's errorCode (the HTTP status the entry's failure
// answers alone) and errorMessage, with ferry's string code beside them.
func AppendEntryResults(b []byte, errs []messaging.EntryError) []byte {
	var client, server int
	for _, e := range errs {
		if e != nil {
			CountFailure(apierror.From(e), &client, &server)
		}
	}
	b = append(b, `{"clientFailures":`...)
	b = strconv.AppendInt(b, int64(client), 10)
	b = append(b, `,"entries":[`...)
	for i, e := range errs {
		if i > 0 {
			b = append(b, ',')
		}
		if e == nil {
			b = append(b, "{}"...)
			continue
		}
		apiErr := apierror.From(e)
		b = append(b, `{"code":`...)
		b = jsonx.AppendString(b, apiErr.Code)
		b = append(b, `,"errorCode":`...)
		b = strconv.AppendInt(b, int64(apiErr.Status), 10)
		b = append(b, `,"errorMessage":`...)
		b = jsonx.AppendString(b, apiErr.Message)
		b = append(b, '}')
	}
	b = append(b, `],"serverFailures":`...)
	b = strconv.AppendInt(b, int64(server), 10)
	return append(b, '}')
}

// appendTime appends t as encoding/json does (quoted RFC 3339 with nanoseconds, trailing zeros dropped). The
// quotes go around AppendFormat, not into its layout: time.RFC3339Nano alone takes the fast formatter, any other
// layout is parsed anew on every call (that was 4 % of ferry's CPU under load).
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// AppendGetMessages appends {"messages":[…]} with each message's fields in the order (and with the omissions) of
// api.GetMessage's JSON encoding: the GetMessages body, and a watch's messages frame. Attributes are stored as
// the JSON that json.Marshal gave for them when they were published, and copied into the answer as they are.
func AppendGetMessages(b []byte, got []messaging.Delivered) []byte {
	b = appendMessagesMember(append(b, '{'), got)
	return append(b, '}')
}

// appendMessagesMember appends the "messages" member of a GetMessages answer.
func appendMessagesMember(b []byte, got []messaging.Delivered) []byte {
	b = append(b, `"messages":[`...)
	for i := range got {
		m := &got[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if len(m.Attributes) > 0 {
			b = append(b, `"attributes":`...)
			b = append(b, m.Attributes...)
			b = append(b, ',')
		}
		b = append(b, `"content":`...)
		b = jsonx.AppendString(b, m.Content)
		b = append(b, `,"createdAt":`...)
		b = appendTime(b, m.TimeCreated)
		b = append(b, `,"deliveryCount":`...)
		b = strconv.AppendInt(b, int64(m.DeliveryCount), 10)
		b = append(b, `,"expireAfter":`...)
		b = appendTime(b, m.ExpireAt)
		b = append(b, `,"id":`...)
		b = strconv.AppendInt(b, m.ID, 10)
		if m.NegativeCode != nil {
			b = append(b, `,"lastNegative":{"code":`...)
			b = jsonx.AppendString(b, *m.NegativeCode)
			if m.NegativeText != nil {
				b = append(b, `,"reason":`...)
				b = jsonx.AppendString(b, *m.NegativeText)
			}
			b = append(b, '}')
		}
		if m.ChannelID != "" || len(m.CustomProperties) > 0 || m.Traceparent != "" || m.MessageGroupID != "" {
			b = append(b, `,"metadata":{`...)
			sep := byte(0)
			if m.ChannelID != "" {
				b = append(b, `"channelId":`...)
				b = jsonx.AppendString(b, m.ChannelID)
				sep = ','
			}
			if len(m.CustomProperties) > 0 { // stored as json.Marshal wrote the map (appendMetadata in messaging)
				if sep != 0 {
					b = append(b, sep)
				}
				b = append(b, `"customProperties":`...)
				b = append(b, m.CustomProperties...)
				sep = ','
			}
			for _, f := range [...]struct{ name, value string }{
				{`"messageGroupId":`, m.MessageGroupID}, {`"traceparent":`, m.Traceparent},
			} {
				if f.value == "" {
					continue
				}
				if sep != 0 {
					b = append(b, sep)
				}
				b = append(b, f.name...)
				b = jsonx.AppendString(b, f.value)
				sep = ','
			}
			b = append(b, '}')
		}
		b = append(b, `,"receipt":`...)
		b = jsonx.AppendString(b, m.Receipt)
		b = append(b, `,"visibleAfter":`...)
		b = appendTime(b, m.VisibleAt)
		b = append(b, '}')
	}
	return append(b, ']')
}

// CountFailure counts a failed entry of a batch as the client's (4xx: clientFailures) or the server's (5xx:
// serverFailures).
func CountFailure(e *apierror.Error, client, server *int) {
	if e.Status >= 500 {
		*server++
	} else {
		*client++
	}
}

// AppendDeleteAndGetMessages appends the DeleteAndGetMessages answer: under "deleted", AppendEntryResults'
// outcome of the acknowledgement, and AppendGetMessages' "messages".
func AppendDeleteAndGetMessages(b []byte, got []messaging.Delivered, errs []messaging.EntryError) []byte {
	b = append(b, `{"deleted":`...)
	b = AppendEntryResults(b, errs)
	b = appendMessagesMember(append(b, ','), got)
	return append(b, '}')
}
