package dataplane

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/jsonx"
	"github.com/ferry-mq/ferry/services/messaging"
)

// The GetMessages response carries up to 32 message bodies of up to 256 KiB: it is written by hand into a pooled
// buffer instead of through encoding/json's reflection. The bytes are those json.Marshal gives for the
// api.GetMessages the handler used to build (TestGetMessagesEncoding).

var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// maxPooledBuffer: buffers that grew past this (large messages) are left to the GC rather than kept.
const maxPooledBuffer = 1 << 20

// writeGetMessages answers 200 with the GetMessages body for got.
func writeGetMessages(c *gin.Context, got []messaging.Delivered) {
	writeBody(c, func(b []byte) ([]byte, error) { return AppendGetMessages(b, got) })
}

// writeBody answers 200 with the JSON body that appendBody appends to a pooled buffer.
func writeBody(c *gin.Context, appendBody func(b []byte) ([]byte, error)) {
	bp := bodyBuffers.Get().(*[]byte)
	body, err := appendBody((*bp)[:0])
	if err != nil {
		apierror.Write(c, err)
	} else {
		c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	}
	if cap(body) <= maxPooledBuffer {
		*bp = body[:0]
		bodyBuffers.Put(bp)
	}
}

// appendPutMessages appends the PutMessages result: json.Marshal of api.PutMessages with every entry's
// consumerGroups set.
func appendPutMessages(b []byte, results []persistence.PutResult) []byte {
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

// appendEntryResults appends a DeleteMessagesResult: json.Marshal of api.DeleteMessagesResult, an empty object
// for each entry that succeeded.
func appendEntryResults(b []byte, errs []messaging.EntryError) []byte {
	var client, server int
	for _, e := range errs {
		if e != nil {
			countFailure(apierror.From(e), &client, &server)
		}
	}
	b = append(b, `{"clientFailedCount":`...)
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
		b = append(b, `{"errorCode":`...)
		b = jsonx.AppendString(b, apiErr.Code)
		b = append(b, `,"errorMessage":`...)
		b = jsonx.AppendString(b, apiErr.Message)
		b = append(b, '}')
	}
	b = append(b, `],"serverFailedCount":`...)
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
// api.GetMessage's JSON encoding: the GetMessages body, and a watch's messages frame.
func AppendGetMessages(b []byte, got []messaging.Delivered) ([]byte, error) {
	b = append(b, `{"messages":[`...)
	for i := range got {
		m := &got[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if len(m.Attributes) > 0 {
			attrs, err := json.Marshal(m.Attributes)
			if err != nil {
				return b, err
			}
			b = append(b, `"attributes":`...)
			b = append(b, attrs...)
			b = append(b, ',')
		}
		b = append(b, `"content":`...)
		b = jsonx.AppendString(b, m.Content)
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
		if m.ChannelID != "" || m.Traceparent != "" || m.MessageGroupID != "" {
			b = append(b, `,"metadata":{`...)
			sep := byte(0)
			for _, f := range [...]struct{ name, value string }{
				{`"channelId":`, m.ChannelID}, {`"messageGroupId":`, m.MessageGroupID}, {`"traceparent":`, m.Traceparent},
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
	return append(b, "]}"...), nil
}
