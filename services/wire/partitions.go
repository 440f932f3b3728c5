package wire

import (
	"strconv"

	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/wire/jsonx"
)

// AppendPartitionMessages appends the GetPartitionMessages body: the group's generation, the caller's partitions
// and their messages (api.PartitionMessages). Attributes and metadata are copied as they were stored (the JSON
// json.Marshal gave when they were published). TestPartitionMessagesEncoding holds it to encoding/json.
func AppendPartitionMessages(b []byte, got persistence.Fetched) []byte {
	b = append(b, `{"generation":`...)
	b = strconv.AppendInt(b, got.Generation, 10)
	b = append(b, `,"partitions":`...)
	b = AppendPartitionStates(b, got.Owned)
	b = append(b, `,"messages":[`...)
	for i := range got.Records {
		m := &got.Records[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, m.ID, 10)
		b = append(b, `,"partition":`...)
		b = strconv.AppendInt(b, int64(m.Partition), 10)
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, m.Offset, 10)
		b = append(b, `,"generation":`...)
		b = strconv.AppendInt(b, m.Generation, 10)
		b = append(b, `,"content":`...)
		b = jsonx.AppendString(b, m.Content)
		b = append(b, `,"createdAt":`...)
		b = appendTime(b, m.CreatedAt)
		b = append(b, `,"expireAfter":`...)
		b = appendTime(b, m.ExpireAt)
		if m.ChannelID != "" {
			b = append(b, `,"channelId":`...)
			b = jsonx.AppendString(b, m.ChannelID)
		}
		if len(m.Attributes) > 0 {
			b = append(b, `,"attributes":`...)
			b = append(b, m.Attributes...)
		}
		if len(m.Metadata) > 0 {
			b = append(b, `,"metadata":`...)
			b = append(b, m.Metadata...)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// AppendPartitionStates appends a list of api.PartitionState.
func AppendPartitionStates(b []byte, states []persistence.PartitionState) []byte {
	b = append(b, '[')
	for i, s := range states {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"committedOffset":`...)
		b = strconv.AppendInt(b, s.Committed, 10)
		b = append(b, `,"generation":`...)
		b = strconv.AppendInt(b, s.Generation, 10)
		b = append(b, `,"lag":`...)
		b = strconv.AppendInt(b, s.Lag(), 10)
		b = append(b, `,"latestOffset":`...)
		b = strconv.AppendInt(b, s.Latest, 10)
		if s.Owner != "" {
			b = append(b, `,"owner":`...)
			b = jsonx.AppendString(b, s.Owner)
		}
		b = append(b, `,"partition":`...)
		b = strconv.AppendInt(b, int64(s.Partition), 10)
		b = append(b, '}')
	}
	return append(b, ']')
}
