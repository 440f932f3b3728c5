package httpapi

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/openapi/api"
)

// The hot data-plane bodies (PutMessages, DeleteMessages, UpdateMessages, UpdateMessage) are checked by the
// hand-written decoders below instead of kin-openapi, which decodes into map[string]any and walks the schema: a
// fifth of ferry's CPU on the message path. A decoder answers ok only for a body that kin-openapi and the
// validator's own checks (trailing data, NUL characters) accept, and then returns the same values the handler
// would decode. Everything else — any error, and anything unusual such as escapes that decode to NUL, raw invalid
// UTF-8, duplicate keys, numbers written as 1.0 or 1e2 — falls back to the full kin-openapi validation, which
// gives the error (or accepts after all). So the error bodies are kin-openapi's by construction; a decoder can
// only be wrong by accepting what kin-openapi refuses, which FuzzFastBodies checks against kin-openapi itself.
var fastBodies = map[string]func(body []byte) (any, bool){
	"PutMessages":    decodePutMessages,
	"DeleteMessages": decodeDeleteMessages,
	"UpdateMessages": decodeUpdateMessages,
	"UpdateMessage":  decodeUpdateMessage,
}

// decodedBodyKey holds the body a fast decoder produced, in the gin context.
const decodedBodyKey = "ferry.httpapi.decodedBody"

// DecodedBody returns the request body as decoded by the validator's fast path (ok false when the request took the
// kin-openapi path: the handler decodes the body itself).
func DecodedBody[T any](c *gin.Context) (*T, bool) {
	v, ok := c.Get(decodedBodyKey)
	if !ok {
		return nil, false
	}
	body, ok := v.(*T)
	return body, ok
}

// Limits from the spec's schemas (openapi/openapi.yaml); TestFastBodyLimits checks them against the spec.
const (
	maxPutEntries     = 20
	maxAckEntries     = 32 // deleteMessages and updateMessages: one GetMessages' worth
	maxContentChars   = 262144
	maxAttributes     = 32
	maxAttributeChars = 256
	maxChannelChars   = 256
	maxGroupChars     = 128
	maxDedupChars     = 128
	maxTraceChars     = 128
	maxDelaySeconds   = 900
	maxReceiptChars   = 1024
	maxVisibility     = 43200
)

func decodePutMessages(b []byte) (any, bool) {
	s := scanner{b: b}
	out := &api.PutMessagesDetails{}
	ok := s.object(func(key string) bool {
		if key != "messages" || out.Messages != nil {
			return false
		}
		out.Messages = make([]api.PutMessagesDetailsEntry, 0, 4)
		return s.array(func() bool {
			if len(out.Messages) == maxPutEntries {
				return false
			}
			e, ok := s.putEntry()
			out.Messages = append(out.Messages, e)
			return ok
		})
	})
	if !ok || !s.end() || len(out.Messages) == 0 {
		return nil, false
	}
	return out, true
}

func (s *scanner) putEntry() (api.PutMessagesDetailsEntry, bool) {
	var e api.PutMessagesDetailsEntry
	var hasContent bool
	ok := s.object(func(key string) bool {
		switch key {
		case "content":
			if hasContent {
				return false
			}
			hasContent = true
			var ok bool
			e.Content, ok = s.str()
			return ok && charsIn(e.Content, 1, maxContentChars)
		case "attributes":
			if e.Attributes != nil {
				return false
			}
			attrs := api.MessageAttributes{}
			e.Attributes = &attrs
			return s.object(func(key string) bool {
				if _, dup := attrs[key]; dup || len(attrs) == maxAttributes {
					return false
				}
				if s.peek() == '"' {
					v, ok := s.str()
					attrs[key] = v
					return ok && charsIn(v, 0, maxAttributeChars)
				}
				v, ok := s.float()
				attrs[key] = v
				return ok
			})
		case "metadata":
			if e.Metadata != nil {
				return false
			}
			e.Metadata = &api.MessageMetadata{}
			return s.metadata(e.Metadata)
		}
		return false
	})
	return e, ok && hasContent
}

func (s *scanner) metadata(md *api.MessageMetadata) bool {
	str := func(dst **string, minChars, maxChars int) bool {
		if *dst != nil {
			return false
		}
		v, ok := s.str()
		*dst = &v
		return ok && charsIn(v, minChars, maxChars)
	}
	return s.object(func(key string) bool {
		switch key {
		case "channelId":
			return str(&md.ChannelId, 1, maxChannelChars) && !strings.Contains(*md.ChannelId, "*")
		case "messageGroupId":
			return str(&md.MessageGroupId, 1, maxGroupChars)
		case "deduplicationId":
			return str(&md.DeduplicationId, 1, maxDedupChars)
		case "traceparent":
			return str(&md.Traceparent, 0, maxTraceChars)
		case "delayInSeconds":
			if md.DelayInSeconds != nil {
				return false
			}
			n, ok := s.uint(maxDelaySeconds)
			md.DelayInSeconds = &n
			return ok
		}
		return false
	})
}

func decodeDeleteMessages(b []byte) (any, bool) {
	s := scanner{b: b}
	out := &api.DeleteMessagesDetails{}
	ok := s.object(func(key string) bool {
		if key != "entries" || out.Entries != nil {
			return false
		}
		out.Entries = make([]api.DeleteMessagesDetailsEntry, 0, maxAckEntries)
		return s.array(func() bool {
			if len(out.Entries) == maxAckEntries {
				return false
			}
			var e api.DeleteMessagesDetailsEntry
			var has bool
			ok := s.object(func(key string) bool {
				if key != "receipt" || has {
					return false
				}
				has = true
				var ok bool
				e.Receipt, ok = s.str()
				return ok && charsIn(e.Receipt, 1, maxReceiptChars)
			})
			out.Entries = append(out.Entries, e)
			return ok && has
		})
	})
	if !ok || !s.end() || len(out.Entries) == 0 {
		return nil, false
	}
	return out, true
}

func decodeUpdateMessages(b []byte) (any, bool) {
	s := scanner{b: b}
	out := &api.UpdateMessagesDetails{}
	ok := s.object(func(key string) bool {
		if key != "entries" || out.Entries != nil {
			return false
		}
		out.Entries = make([]api.UpdateMessagesDetailsEntry, 0, maxAckEntries)
		return s.array(func() bool {
			if len(out.Entries) == maxAckEntries {
				return false
			}
			var e api.UpdateMessagesDetailsEntry
			var hasReceipt, hasVisibility bool
			ok := s.object(func(key string) bool {
				var ok bool
				switch {
				case key == "receipt" && !hasReceipt:
					hasReceipt = true
					e.Receipt, ok = s.str()
					return ok && charsIn(e.Receipt, 1, maxReceiptChars)
				case key == "visibilityInSeconds" && !hasVisibility:
					hasVisibility = true
					e.VisibilityInSeconds, ok = s.uint(maxVisibility)
					return ok
				}
				return false
			})
			out.Entries = append(out.Entries, e)
			return ok && hasReceipt && hasVisibility
		})
	})
	if !ok || !s.end() || len(out.Entries) == 0 {
		return nil, false
	}
	return out, true
}

func decodeUpdateMessage(b []byte) (any, bool) {
	s := scanner{b: b}
	out := &api.UpdateMessageDetails{}
	var has bool
	ok := s.object(func(key string) bool {
		if key != "visibilityInSeconds" || has {
			return false
		}
		has = true
		var ok bool
		out.VisibilityInSeconds, ok = s.uint(maxVisibility)
		return ok
	})
	if !ok || !s.end() || !has {
		return nil, false
	}
	return out, true
}

// charsIn reports whether s has min to max characters, counted as kin-openapi counts a string's length (runes).
// A string has no more runes than bytes, and at least one when it is not empty: most strings need no counting.
func charsIn(s string, min, max int) bool {
	if len(s) < min {
		return false
	}
	if len(s) <= max && min <= 1 {
		return true
	}
	n := utf8.RuneCountInString(s)
	return n >= min && n <= max
}

// scanner reads the JSON subset the fast decoders accept. Every method answers false on anything it does not
// handle, and the caller falls back to kin-openapi.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) consume(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only whitespace remains.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// object reads an object, calling member with each key; member reads the value.
func (s *scanner) object(member func(key string) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		key, ok := s.str()
		if !ok || !s.consume(':') || !member(key) {
			return false
		}
		if s.consume('}') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// array reads an array, calling elem for each element; elem reads it.
func (s *scanner) array(elem func() bool) bool {
	if !s.consume('[') {
		return false
	}
	if s.consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.consume(']') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// str reads a string. Without escapes (the common case) the text is taken as is, provided it is valid UTF-8
// (encoding/json would replace invalid bytes); with escapes encoding/json decodes it, and text holding NUL is
// refused (the validator refuses NUL everywhere).
func (s *scanner) str() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	start, escaped := s.i+1, false
	// Eight bytes at a time up to the first quote, backslash or control character (usually the closing quote).
	j, high := start, uint64(0)
	for ; j+8 <= len(s.b); j += 8 {
		w := binary.LittleEndian.Uint64(s.b[j:])
		if (w-0x20*lsb)&^w&msb|zeroByte(w^'"'*lsb)|zeroByte(w^'\\'*lsb) != 0 {
			break
		}
		high |= w
	}
	ascii := high&msb == 0
	for ; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			if escaped {
				var out string
				if json.Unmarshal(s.b[start-1:j+1], &out) != nil || strings.IndexByte(out, 0) >= 0 {
					return "", false
				}
				return out, true
			}
			raw := s.b[start:j]
			if !ascii && !utf8.Valid(raw) {
				return "", false
			}
			return string(raw), true
		case c == '\\':
			escaped = true
			j++
		case c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", false
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// zeroByte is non-zero when w has a zero byte (and then only the high bits of bytes can be set). With w-0x20*lsb
// in place of w-lsb it flags a byte below 0x20 likewise.
func zeroByte(w uint64) uint64 { return (w - lsb) &^ w & msb }

// uint reads a non-negative integer written in plain digits, at most max.
func (s *scanner) uint(max int) (int, bool) {
	s.ws()
	start, n := s.i, 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
		if n > max {
			return 0, false
		}
	}
	digits := s.i - start
	if digits == 0 || digits > 1 && s.b[start] == '0' || s.i < len(s.b) && isNumberByte(s.b[s.i]) {
		return 0, false
	}
	return n, true
}

// float reads a JSON number as encoding/json would (strconv.ParseFloat of its text).
func (s *scanner) float() (float64, bool) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	intStart := s.i
	s.digits()
	if s.i == intStart || s.i-intStart > 1 && s.b[intStart] == '0' {
		return 0, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return 0, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return 0, false
		}
	}
	if s.i < len(s.b) && isNumberByte(s.b[s.i]) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	return f, err == nil
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}
