package push

import (
	"github.com/ferry-mq/ferry/services/apierror"
)

// The frames of the watch protocol (JSON text messages; see WatchMessages in openapi/openapi.yaml).

// helloFrame is the server's first frame.
type helloFrame struct {
	ConsumerID      string `json:"consumerId"`
	ConsumerGroupID string `json:"consumerGroupId"`
	Window          int    `json:"window"`
	AutoCommit      bool   `json:"autoCommit"`
	LoadBalancing   string `json:"loadBalancing"` // MESSAGE or PARTITION: the frames that follow
}

// A messages frame pushes leased messages: it is the GetMessages body, {"messages":[…]}
// (wire.AppendGetMessages); on a PARTITION group, the GetPartitionMessages body (partitions.go).

// statusFrame tells the consumer its status changed (STANDBY, RUNNING, LEAVING).
type statusFrame struct {
	Status string `json:"status"`
}

// replyFrame answers a commit or negative frame: the entries that failed (the others succeeded), or the error
// of the whole frame.
type replyFrame struct {
	Reply reply `json:"reply"`
}

type reply struct {
	ID     string       `json:"id,omitempty"`
	Errors []entryError `json:"errors"`
	Error  *errorBody   `json:"error,omitempty"`
}

type entryError struct {
	Index   int    `json:"index"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorFrame answers a frame that could not be read.
type errorFrame struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func bodyOf(err error) *errorBody {
	e := apierror.From(err)
	return &errorBody{Code: e.Code, Message: e.Message}
}

// clientFrame is what a consumer sends: commit and/or negative acknowledgements.
type clientFrame struct {
	ID       string   `json:"id,omitempty"`
	Commit   []string `json:"commit,omitempty"`
	Negative []string `json:"negative,omitempty"`
	Code     string   `json:"code,omitempty"`
	Reason   string   `json:"reason,omitempty"`

	// A PARTITION group's frame (partitions.go): the offsets to commit.
	partitionFrame bool
	offsets        []offsetFrame
}

// shutdownCode is the negative code that stops the pushing and releases everything the consumer holds.
const shutdownCode = "Shutdown"
