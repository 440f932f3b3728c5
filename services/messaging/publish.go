package messaging

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"go.opentelemetry.io/otel/propagation"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/metering"
	"github.com/ferry-mq/ferry/services/wire/jsonx"
)

// PutEntry is one message to publish. Put checks it against the API's limits (package openapi), the same numbers
// the request validator enforces, since a PutEntry need not come through HTTP.
type PutEntry struct {
	Content    string
	Attributes map[string]any // values: string or float64
	// CustomProperties are OCI's metadata.customProperties: string attributes that come back in the metadata,
	// where OCI clients look for them. Filters see them with the attributes (a key may not be in both), and the
	// two share the attribute limits.
	CustomProperties map[string]string
	ChannelID        string
	DelaySeconds     int32
	DedupID          string
	Traceparent      string
	// MessageGroupID orders the message after the earlier ones of its message group, in every consumer group
	// ("" = unordered). A delayed message is delivered out of its group's order (it neither waits nor holds the
	// group back): ordering it would let a delay block the group, or need a second head per group.
	MessageGroupID string
	// PartitionKey chooses the message's partition on a partitioned queue ("" = MessageGroupID, else the
	// channel, else round robin). Routing only: it is not stored.
	PartitionKey string
}

// Put validates and stores a batch (all or nothing) and wakes the queue's consumers. Results are in batch order.
func (s *Service) Put(ctx context.Context, tenancyID, queueID string, entries []PutEntry) ([]persistence.PutResult, error) {
	q, err := s.queues.active(ctx, tenancyID, queueID)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 || len(entries) > openapi.MaxPutMessages {
		return nil, fault.InvalidParameter("messages: a batch holds 1 to %d messages", openapi.MaxPutMessages)
	}
	groups, err := s.groups.of(ctx, q)
	if err != nil {
		return nil, err
	}
	if q.PartitionCount > 0 {
		return s.putPartitioned(ctx, q, groups, entries)
	}
	allGroups := make([]int32, len(groups))
	for i, g := range groups {
		allGroups[i] = g.No
	}
	// Validate everything first (a rejected batch writes nothing), then fan out: each message goes to the enabled
	// groups whose filter matches its attributes; a message no group takes is discarded and counted.
	results := make([]persistence.PutResult, len(entries))
	var msgs []persistence.NewMessage
	var idx []int
	bytesByChannel := map[string]int64{}
	channels := map[string]bool{}
	var batchBytes int64
	// Without an explicit one, the publishing request's own trace context links consumer to producer: the same for
	// every message of the batch.
	requestTrace := traceparentOf(ctx)
	for i, e := range entries {
		m, err := encode(i, e, requestTrace, maxContentLength(q))
		if err != nil {
			return nil, err
		}
		m.Groups = fanout(groups, filterInput(e))
		if len(m.Groups) == 0 {
			continue
		}
		msgs, idx = append(msgs, m), append(idx, i)
		bytesByChannel[m.ChannelID] += int64(m.SizeBytes) * int64(len(m.Groups))
		channels[m.ChannelID] = true
		batchBytes += int64(m.SizeBytes) * int64(len(m.Groups))
	}
	discarded := int64(len(entries) - len(msgs))
	if len(msgs) == 0 {
		if err := s.countDiscarded(ctx, tenancyID, queueID, discarded); err != nil {
			return nil, err
		}
		return results, nil
	}
	if err := s.checkSize(tenancyID, q, batchBytes, bytesByChannel); err != nil {
		return nil, err
	}
	stored, err := s.messages.Put(ctx, queueID, q.RetentionSeconds, q.DedupWindowSeconds, allGroups, msgs)
	if err != nil {
		if ctx.Err() != nil {
			// The caller went away, but the batch its messages were in may have committed without it: wake the
			// consumers anyway (at worst one finds nothing), or they would find the messages only at their
			// fallback poll.
			s.waiters.wakeQueue(queueID)
			s.notifier.mark(persistence.MessagesAvailable, queueID)
		}
		return nil, err
	}
	// Counted only once the batch is accepted (a refused batch discards nothing). The stored messages are
	// committed: failing the call now would make the producer publish them again, so a failed count is logged.
	if err := s.countDiscarded(ctx, tenancyID, queueID, discarded); err != nil {
		s.logger.Error("counting discarded messages", "queue", queueID, "discarded", discarded, "error", err)
	}
	fresh := 0
	var maxID, freshBytes int64
	copies := make(map[int32]int64, len(groups)) // per consumer group: the copies it received
	for k, r := range stored {
		if r.Duplicate {
			r.Groups = len(msgs[k].Groups)
		} else {
			fresh++
			maxID = max(maxID, r.ID)
			freshBytes += int64(msgs[k].SizeBytes)
			for _, g := range msgs[k].Groups {
				copies[g]++
			}
		}
		results[idx[k]] = r
	}
	for g, n := range copies {
		s.meter.CountGroup(tenancyID, queueID, g, metering.Published, n)
	}
	if fresh > 0 {
		s.sizes.add(queueID, bytesByChannel, maxID)
		for _, g := range groups {
			s.channels.published(channelKey{queueID: queueID, groupNo: g.No}, channels)
		}
		s.waiters.wakeQueue(queueID) // local consumers do not wait for the NOTIFY round trip
		s.notifier.markPut(queueID, channels)
		s.meter.Count(tenancyID, queueID, persistence.WholeQueue, metering.Published, int64(fresh))
		s.meter.Count(tenancyID, queueID, persistence.WholeQueue, metering.PublishedBytes, freshBytes)
	}
	return results, nil
}

// countDiscarded records messages that no consumer group took (DESIGN section 7): in the queue's stats and in
// its metrics.
func (s *Service) countDiscarded(ctx context.Context, tenancyID, queueID string, n int64) error {
	if n == 0 {
		return nil
	}
	if err := s.messages.AddDiscarded(context.WithoutCancel(ctx), queueID, n); err != nil {
		return err
	}
	s.meter.Count(tenancyID, queueID, persistence.WholeQueue, metering.Discarded, n)
	return nil
}

// checkSize answers 429 when the batch would take the queue past maxSizeInBytes, a channel past its share
// (channelConsumptionLimit percent of it), or the tenancy past its stored-bytes quota.
func (s *Service) checkSize(tenancyID string, q persistence.Queue, batchBytes int64, byChannel map[string]int64) error {
	total, channelBytes := s.sizes.get(q.ID, tenancyID, byChannel)
	if s.cfg.StoredBytesOf != nil {
		if limit := s.cfg.StoredBytesOf(tenancyID); s.sizes.tenancyTotal(tenancyID)+batchBytes > limit {
			return fault.TooManyRequests(5, "the tenancy stores its most bytes (quota \"stored-bytes\": %d): consume messages or ask the operator to raise it", limit)
		}
	}
	if total+batchBytes > q.MaxSizeBytes {
		return fault.TooManyRequests(5, "the queue is full (maxSizeInBytes %d): consume messages or raise the limit", q.MaxSizeBytes)
	}
	if q.ChannelConsumptionLimit < 100 {
		share := q.MaxSizeBytes * int64(q.ChannelConsumptionLimit) / 100
		for ch, n := range byChannel {
			if channelBytes[ch]+n > share {
				return fault.TooManyRequests(5, "channel %q holds its share of the queue (channelConsumptionLimit %d%%)", ch, q.ChannelConsumptionLimit)
			}
		}
	}
	return nil
}

// traceparentOf renders the trace context of ctx as a traceparent ("" without one).
func traceparentOf(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// encode validates one entry and renders its stored form (requestTrace is the traceparent stored when the entry
// has none). Errors name the entry: messages[i].field. Lengths are counted in characters, as the API's schema
// counts them, except the content's, which is bounded in bytes too (its size is what the queue stores).
func encode(i int, e PutEntry, requestTrace string, maxContent int) (persistence.NewMessage, error) {
	field := func(name string) string { return "messages[" + strconv.Itoa(i) + "]." + name }
	invalid := func(name, format string, args ...any) (persistence.NewMessage, error) {
		return persistence.NewMessage{}, fault.InvalidParameter("%s: "+format, append([]any{field(name)}, args...)...)
	}
	if !utf8.ValidString(e.Content) {
		return invalid("content", "must be valid UTF-8")
	}
	if len(e.Content) > maxContent {
		return invalid("content", "%d bytes is more than %d", len(e.Content), maxContent)
	}
	if len(e.Attributes)+len(e.CustomProperties) > openapi.MaxAttributes {
		return invalid("attributes", "at most %d attributes and metadata.customProperties together", openapi.MaxAttributes)
	}
	size := len(e.Content)
	for k, v := range e.CustomProperties {
		name := "metadata.customProperties." + k
		if k == "" || utf8.RuneCountInString(k) > openapi.MaxAttributeKeyLength {
			return invalid("metadata.customProperties", "keys are 1 to %d characters", openapi.MaxAttributeKeyLength)
		}
		if _, clash := e.Attributes[k]; clash {
			return invalid(name, "%q is an attribute too: filters see attributes and custom properties as one set of keys", k)
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return invalid(name, "must be valid UTF-8")
		}
		if utf8.RuneCountInString(v) > openapi.MaxAttributeValueLength {
			return invalid(name, "values are at most %d characters", openapi.MaxAttributeValueLength)
		}
		size += len(k) + len(v)
	}
	for k, v := range e.Attributes {
		if k == "" || utf8.RuneCountInString(k) > openapi.MaxAttributeKeyLength {
			return invalid("attributes", "keys are 1 to %d characters", openapi.MaxAttributeKeyLength)
		}
		size += len(k)
		switch val := v.(type) {
		case string:
			if utf8.RuneCountInString(val) > openapi.MaxAttributeValueLength {
				return invalid("attributes."+k, "string values are at most %d characters", openapi.MaxAttributeValueLength)
			}
			size += len(val)
		case float64:
			if math.IsNaN(val) || math.IsInf(val, 0) {
				return invalid("attributes."+k, "must be a finite number")
			}
			size += 8
		case json.Number:
			if f, err := val.Float64(); err != nil || math.IsInf(f, 0) {
				return invalid("attributes."+k, "must be a finite number")
			}
			size += 8
		default:
			return invalid("attributes."+k, "must be a string or a number")
		}
	}
	if e.DelaySeconds < 0 || e.DelaySeconds > openapi.MaxDelaySeconds {
		return invalid("metadata.delayInSeconds", "must be 0 to %d", openapi.MaxDelaySeconds)
	}
	if !utf8.ValidString(e.ChannelID) || utf8.RuneCountInString(e.ChannelID) > openapi.MaxChannelIDLength {
		return invalid("metadata.channelId", "at most %d characters of UTF-8", openapi.MaxChannelIDLength)
	}
	if !utf8.ValidString(e.DedupID) || utf8.RuneCountInString(e.DedupID) > openapi.MaxDeduplicationIDLength {
		return invalid("metadata.deduplicationId", "at most %d characters of UTF-8", openapi.MaxDeduplicationIDLength)
	}
	if g := e.MessageGroupID; g != "" && (!utf8.ValidString(g) || utf8.RuneCountInString(g) > openapi.MaxMessageGroupIDLength) {
		return invalid("metadata.messageGroupId", "1 to %d characters of UTF-8", openapi.MaxMessageGroupIDLength)
	}
	m := persistence.NewMessage{
		ChannelID:    e.ChannelID,
		DelaySeconds: e.DelaySeconds,
		SizeBytes:    int32(size),
		Content:      e.Content,
		DedupID:      e.DedupID,
	}
	if e.DelaySeconds == 0 {
		m.MessageGroup = e.MessageGroupID
	}
	if len(e.Attributes) > 0 {
		m.Attributes = appendAttributes(nil, e.Attributes)
	}
	traceparent := e.Traceparent
	if traceparent == "" {
		traceparent = requestTrace
	}
	m.Metadata = appendMetadata(nil, e.CustomProperties, e.DedupID, e.MessageGroupID, traceparent)
	return m, nil
}

// maxContentLength is the most bytes of a message's content on q: 1 MiB with the LARGE_MESSAGES capability, else
// 256 KiB.
func maxContentLength(q persistence.Queue) int {
	if q.LargeMessages {
		return openapi.MaxContentLength
	}
	return openapi.MaxStandardContentLength
}

// filterInput is what consumer group filters see of a message: its attributes and its custom properties as one
// set (encode refused a key in both). Without custom properties it is the attributes map itself.
func filterInput(e PutEntry) map[string]any {
	if len(e.CustomProperties) == 0 {
		return e.Attributes
	}
	all := make(map[string]any, len(e.Attributes)+len(e.CustomProperties))
	maps.Copy(all, e.Attributes)
	for k, v := range e.CustomProperties {
		all[k] = v
	}
	return all
}

// appendAttributes renders validated attributes as they are stored, and later handed to consumers as they are:
// the object json.Marshal gives for the map (keys sorted, strings escaped and numbers written as encoding/json
// writes them; a json.Number as the float64 it holds).
func appendAttributes(b []byte, attrs map[string]any) []byte {
	return appendObject(b, attrs, func(b []byte, v any) []byte {
		switch v := v.(type) {
		case string:
			return jsonx.AppendString(b, v)
		case float64:
			return jsonx.AppendFloat(b, v)
		case json.Number:
			f, _ := v.Float64()
			return jsonx.AppendFloat(b, f)
		}
		return b
	})
}

// appendObject renders a map as json.Marshal does: keys sorted and escaped, each value by appendValue.
func appendObject[V any](b []byte, m map[string]V, appendValue func([]byte, V) []byte) []byte {
	sep := byte('{')
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = append(b, sep)
		sep = ','
		b = jsonx.AppendString(b, k)
		b = append(b, ':')
		b = appendValue(b, m[k])
	}
	if sep == '{' {
		b = append(b, sep)
	}
	return append(b, '}')
}

// appendMetadata renders the stored metadata: the object json.Marshal gives for a map of the non-empty fields
// (keys in sorted order; customProperties a nested object, which consumers are handed as it is stored); nil when
// all are empty.
func appendMetadata(b []byte, custom map[string]string, dedupID, messageGroupID, traceparent string) []byte {
	sep := byte('{')
	if len(custom) > 0 {
		b = append(b, `{"customProperties":`...)
		b = appendObject(b, custom, jsonx.AppendString)
		sep = ','
	}
	for _, f := range [...]struct{ key, value string }{
		{`"deduplicationId":`, dedupID}, {`"messageGroupId":`, messageGroupID}, {`"traceparent":`, traceparent},
	} {
		if f.value == "" {
			continue
		}
		b = append(b, sep)
		b = append(b, f.key...)
		b = jsonx.AppendString(b, f.value)
		sep = ','
	}
	if sep == '{' {
		return b
	}
	return append(b, '}')
}
