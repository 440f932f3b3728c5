package wire

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/services/messaging"
)

// The hot data-plane bodies (PutMessages, DeleteMessages, UpdateMessages, UpdateMessage) are checked and decoded
// by the hand-written decoders below instead of kin-openapi, which decodes into map[string]any and walks the
// schema: a fifth of ferry's CPU on the message path. A decoder answers ok only for a body that kin-openapi and
// the validator's own checks (trailing data, NUL characters) accept, and then returns what the handler's general
// decoding of the same body returns (PutEntries of encoding/json's api.PutMessagesDetails; the api type itself for
// the others). Everything else — any error, and anything unusual such as escapes that decode to NUL, raw invalid
// UTF-8, duplicate keys, numbers written as 1.0 or 1e2 — falls back to the full kin-openapi validation, which
// gives the error (or accepts after all). So the error bodies are kin-openapi's by construction; a decoder can
// only be wrong by accepting what kin-openapi refuses, which FuzzFastBodies (services/httpapi) checks against
// kin-openapi itself.

// FastDecoders maps operationIds to their fast decoders, which return a pointer to the decoded body; ok false
// sends the body to kin-openapi.
var FastDecoders = map[string]func(body []byte) (decoded any, ok bool){
	"PutMessages":    decodePutMessages,
	"DeleteMessages": decodeDeleteMessages,
	"UpdateMessages": decodeUpdateMessages,
	"UpdateMessage":  decodeUpdateMessage,
}

// PutEntries converts a PutMessages body decoded by encoding/json (the general path) into the entries to
// publish: the same values decodePutMessages returns for the bodies it takes.
func PutEntries(body api.PutMessagesDetails) []messaging.PutEntry {
	entries := make([]messaging.PutEntry, len(body.Messages))
	for i, m := range body.Messages {
		e := messaging.PutEntry{Content: m.Content}
		if m.Attributes != nil {
			e.Attributes = *m.Attributes
		}
		if md := m.Metadata; md != nil {
			e.ChannelID = deref(md.ChannelId)
			e.DelaySeconds = int32(deref(md.DelayInSeconds))
			e.DedupID = deref(md.DeduplicationId)
			e.Traceparent = deref(md.Traceparent)
			e.MessageGroupID = deref(md.MessageGroupId)
			if md.CustomProperties != nil {
				e.CustomProperties = *md.CustomProperties
			}
		}
		entries[i] = e
	}
	return entries
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// decodePutMessages decodes a PutMessages body into *[]messaging.PutEntry.
func decodePutMessages(b []byte) (any, bool) {
	s := scanner{b: b}
	var out []messaging.PutEntry
	seen := false
	ok := s.object(func(key string) bool {
		if key != "messages" || seen {
			return false
		}
		seen = true
		out = make([]messaging.PutEntry, 0, 4)
		return s.array(func() bool {
			if len(out) == openapi.MaxPutMessages {
				return false
			}
			e, ok := s.putEntry()
			out = append(out, e)
			return ok
		})
	})
	if !ok || !s.end() || len(out) == 0 {
		return nil, false
	}
	return &out, true
}

func (s *scanner) putEntry() (messaging.PutEntry, bool) {
	var e messaging.PutEntry
	var hasContent, hasAttributes, hasMetadata bool
	ok := s.object(func(key string) bool {
		switch key {
		case "content":
			if hasContent {
				return false
			}
			hasContent = true
			var ok bool
			e.Content, ok = s.str()
			return ok && charsIn(e.Content, 1, openapi.MaxContentLength)
		case "attributes":
			if hasAttributes {
				return false
			}
			hasAttributes = true
			e.Attributes = map[string]any{}
			return s.object(func(key string) bool {
				if _, dup := e.Attributes[key]; dup || len(e.Attributes) == openapi.MaxAttributes {
					return false
				}
				if s.peek() == '"' {
					v, ok := s.str()
					e.Attributes[key] = v
					return ok && charsIn(v, 0, openapi.MaxAttributeValueLength)
				}
				v, ok := s.float()
				e.Attributes[key] = v
				return ok
			})
		case "metadata":
			if hasMetadata {
				return false
			}
			hasMetadata = true
			return s.metadata(&e)
		}
		return false
	})
	return e, ok && hasContent
}

// metadata reads a message's metadata into e.
func (s *scanner) metadata(e *messaging.PutEntry) bool {
	var has [6]bool // channelId, messageGroupId, deduplicationId, traceparent, delayInSeconds, customProperties
	str := func(i int, dst *string, minChars, maxChars int) bool {
		if has[i] {
			return false
		}
		has[i] = true
		v, ok := s.str()
		*dst = v
		return ok && charsIn(v, minChars, maxChars)
	}
	return s.object(func(key string) bool {
		switch key {
		case "channelId": // "" and null are the default channel (OCI's SDK always sends channelId, null for it)
			if !has[0] && s.null() {
				has[0] = true
				return true
			}
			return str(0, &e.ChannelID, 0, openapi.MaxChannelIDLength) && !strings.Contains(e.ChannelID, "*")
		case "messageGroupId":
			return str(1, &e.MessageGroupID, 1, openapi.MaxMessageGroupIDLength)
		case "deduplicationId":
			return str(2, &e.DedupID, 1, openapi.MaxDeduplicationIDLength)
		case "traceparent":
			return str(3, &e.Traceparent, 0, openapi.MaxTraceparentLength)
		case "delayInSeconds":
			if has[4] {
				return false
			}
			has[4] = true
			n, ok := s.uint(openapi.MaxDelaySeconds)
			e.DelaySeconds = int32(n)
			return ok
		case "customProperties":
			if has[5] {
				return false
			}
			has[5] = true
			e.CustomProperties = map[string]string{}
			// Per map, the schema's limits: the keys' length and the limit shared with the attributes are the
			// service's to check (messaging.Put), as for the attributes.
			return s.object(func(key string) bool {
				if _, dup := e.CustomProperties[key]; dup || len(e.CustomProperties) == openapi.MaxAttributes {
					return false
				}
				v, ok := s.str()
				e.CustomProperties[key] = v
				return ok && charsIn(v, 0, openapi.MaxAttributeValueLength)
			})
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
		out.Entries = make([]api.DeleteMessagesDetailsEntry, 0, openapi.MaxAckEntries)
		return s.array(func() bool {
			if len(out.Entries) == openapi.MaxAckEntries {
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
				return ok && charsIn(e.Receipt, 1, openapi.MaxReceiptLength)
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
		out.Entries = make([]api.UpdateMessagesDetailsEntry, 0, openapi.MaxAckEntries)
		return s.array(func() bool {
			if len(out.Entries) == openapi.MaxAckEntries {
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
					return ok && charsIn(e.Receipt, 1, openapi.MaxReceiptLength)
				case key == "visibilityInSeconds" && !hasVisibility:
					hasVisibility = true
					e.VisibilityInSeconds, ok = s.uint(openapi.MaxVisibilitySeconds)
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
		out.VisibilityInSeconds, ok = s.uint(openapi.MaxVisibilitySeconds)
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

// null reads a JSON null (and reports false, reading nothing, when the next value is not null).
func (s *scanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" &&
		(len(s.b) == s.i+4 || !isNumberByte(s.b[s.i+4]) && (s.b[s.i+4] < 'a' || s.b[s.i+4] > 'z')) {
		s.i += 4
		return true
	}
	return false
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
// (encoding/json would replace invalid bytes); with escapes encoding/json decodes it, unless StringProblem finds
// text that the validator refuses (invalid UTF-8, NUL, an unpaired surrogate).
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
				// encoding/json would turn invalid UTF-8 and unpaired surrogate escapes into U+FFFD: those (and
				// NUL) go to the validator's general path, which refuses them.
				var out string
				if StringProblem(s.b[start-1:j+1]) != "" || json.Unmarshal(s.b[start-1:j+1], &out) != nil {
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
