package dataplane

import (
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/services/messaging"
	"github.com/ferry-mq/ferry/services/wire"
)

// bodyBuffers recycles the buffers the hot responses are encoded into (package wire writes them by hand).
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// maxPooledBuffer: buffers that grew past this (large messages) are left to the GC rather than kept.
const maxPooledBuffer = 1 << 20

// writeGetMessages answers 200 with the GetMessages body for got.
func writeGetMessages(c *gin.Context, got []messaging.Delivered) {
	writeBody(c, func(b []byte) []byte { return wire.AppendGetMessages(b, got) })
}

// writeBody answers 200 with the JSON body that appendBody appends to a pooled buffer.
func writeBody(c *gin.Context, appendBody func(b []byte) []byte) {
	bp := bodyBuffers.Get().(*[]byte)
	body := appendBody((*bp)[:0])
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	if cap(body) <= maxPooledBuffer {
		*bp = body[:0]
		bodyBuffers.Put(bp)
	}
}
