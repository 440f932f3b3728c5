// Package dataplane serves the data plane of DESIGN section 7 (messages, stats, channels, redrive).
package dataplane

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/services/apierror"
)

// Handlers implements the data-plane operations of api.ServerInterface.
type Handlers struct{}

func notYet(c *gin.Context) {
	apierror.Write(c, apierror.New(http.StatusNotImplemented, "NotImplemented", "the data plane is not implemented yet"))
}

func (h *Handlers) PutMessages(c *gin.Context, _ api.QueueIdPath, _ api.PutMessagesParams) { notYet(c) }
func (h *Handlers) GetMessages(c *gin.Context, _ api.QueueIdPath, _ api.GetMessagesParams) { notYet(c) }
func (h *Handlers) DeleteMessage(c *gin.Context, _ api.QueueIdPath, _ api.MessageReceiptPath, _ api.DeleteMessageParams) {
	notYet(c)
}
func (h *Handlers) UpdateMessage(c *gin.Context, _ api.QueueIdPath, _ api.MessageReceiptPath, _ api.UpdateMessageParams) {
	notYet(c)
}
func (h *Handlers) DeleteMessages(c *gin.Context, _ api.QueueIdPath, _ api.DeleteMessagesParams) {
	notYet(c)
}
func (h *Handlers) UpdateMessages(c *gin.Context, _ api.QueueIdPath, _ api.UpdateMessagesParams) {
	notYet(c)
}
func (h *Handlers) GetStats(c *gin.Context, _ api.QueueIdPath, _ api.GetStatsParams) { notYet(c) }
func (h *Handlers) ListChannels(c *gin.Context, _ api.QueueIdPath, _ api.ListChannelsParams) {
	notYet(c)
}
func (h *Handlers) RedriveMessages(c *gin.Context, _ api.QueueIdPath, _ api.RedriveMessagesParams) {
	notYet(c)
}
