package wire

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
)

// TestPartitionMessagesEncoding: the hand-written body is what encoding/json writes for the same values (with the
// states as api.PartitionState), so clients decoding with the generated types see the spec's shape.
func TestPartitionMessagesEncoding(t *testing.T) {
	type message struct {
		ID          int64           `json:"id"`
		Partition   int32           `json:"partition"`
		Offset      int64           `json:"offset"`
		Generation  int64           `json:"generation"`
		Content     string          `json:"content"`
		CreatedAt   time.Time       `json:"createdAt"`
		ExpireAfter time.Time       `json:"expireAfter"`
		ChannelID   string          `json:"channelId,omitempty"`
		Attributes  json.RawMessage `json:"attributes,omitempty"`
		Metadata    json.RawMessage `json:"metadata,omitempty"`
	}
	type body struct {
		Generation int64                `json:"generation"`
		Partitions []api.PartitionState `json:"partitions"`
		Messages   []message            `json:"messages"`
	}
	at := time.Date(2026, 12, 1, 18, 0, 0, 123456000, time.UTC)
	got := persistence.Fetched{
		Generation: 7,
		Owned: []persistence.PartitionState{
			{Partition: 0, Owner: "c1", Generation: 7, Committed: 3, Latest: 9},
			{Partition: 2, Generation: 2, Committed: -1, Latest: -1},
		},
		Records: []persistence.PartitionRecord{
			{Partition: 0, Offset: 4, Generation: 7, ID: 41, Content: "quote \" and <tag> \u2028 é", CreatedAt: at, ExpireAt: at.Add(time.Hour)},
			{Partition: 0, Offset: 5, Generation: 7, ID: 42, ChannelID: "ch/1", Content: "", CreatedAt: at, ExpireAt: at,
				Attributes: []byte(`{"a":"x","n":1.5}`), Metadata: []byte(`{"messageGroupId":"g","traceparent":"00-x"}`)},
		},
	}
	want := body{Generation: got.Generation, Messages: []message{}}
	for _, s := range got.Owned {
		st := api.PartitionState{Partition: int(s.Partition), Generation: s.Generation, CommittedOffset: s.Committed,
			LatestOffset: s.Latest, Lag: s.Lag()}
		if s.Owner != "" {
			owner := s.Owner
			st.Owner = &owner
		}
		want.Partitions = append(want.Partitions, st)
	}
	for _, m := range got.Records {
		want.Messages = append(want.Messages, message{m.ID, m.Partition, m.Offset, m.Generation, m.Content, m.CreatedAt,
			m.ExpireAt, m.ChannelID, m.Attributes, m.Metadata})
	}
	expected, err := json.Marshal(want)
	require.NoError(t, err)
	require.Equal(t, string(expected), string(AppendPartitionMessages(nil, got)))

	empty, err := json.Marshal(body{Partitions: []api.PartitionState{}, Messages: []message{}})
	require.NoError(t, err)
	require.Equal(t, string(empty), string(AppendPartitionMessages(nil, persistence.Fetched{})))
}
