package messaging

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"io"
	"sync"

	"github.com/ferry-mq/ferry/persistence"
)

// Receipts are opaque, URL-safe tokens naming one lease of one message: version, flags (DLQ; ordered: the message
// belongs to an ordered message group; shared: its content is stored once for several groups), consumer group, message id and lease id, signed with HMAC-SHA256 over the queue id too, so a receipt cannot be forged, moved to another
// queue, or reused after the message was leased again (the lease id no longer matches).
type Receipts struct {
	key  []byte
	macs sync.Pool // hash.Hash: keyed HMAC-SHA256 states, reset between uses (hmac.New costs two SHA-256 setups)
}

const (
	receiptVersion = 1
	receiptDLQ     = 1 << 0
	receiptOrdered = 1 << 1
	receiptShared  = 1 << 2
	receiptPayload = 1 + 1 + 4 + 8 + 8
	receiptMAC     = 16
)

// ErrBadReceipt is a receipt that was not issued by this service for this queue.
var ErrBadReceipt = errors.New("invalid receipt")

// NewReceipts signs with key (a server secret shared by all nodes).
func NewReceipts(key []byte) *Receipts {
	r := &Receipts{key: key}
	r.macs.New = func() any { return hmac.New(sha256.New, r.key) }
	return r
}

// Encode makes the receipt for a lease.
func (r *Receipts) Encode(queueID string, rc persistence.Receipt) string {
	buf := make([]byte, receiptPayload, receiptPayload+receiptMAC)
	buf[0] = receiptVersion
	if rc.DLQ {
		buf[1] |= receiptDLQ
	}
	if rc.Ordered {
		buf[1] |= receiptOrdered
	}
	if rc.Shared {
		buf[1] |= receiptShared
	}
	binary.BigEndian.PutUint32(buf[2:], uint32(rc.GroupNo))
	binary.BigEndian.PutUint64(buf[6:], uint64(rc.ID))
	binary.BigEndian.PutUint64(buf[14:], uint64(rc.LeaseID))
	buf = append(buf, r.mac(queueID, buf)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// Decode checks a receipt's signature for queueID and returns what it names.
func (r *Receipts) Decode(queueID, receipt string) (persistence.Receipt, error) {
	if len(receipt) > 256 {
		return persistence.Receipt{}, ErrBadReceipt
	}
	// Strict: the unused bits of the last character must be zero, so exactly one spelling of a receipt decodes
	// (otherwise a changed last character could still be accepted).
	buf, err := base64.RawURLEncoding.Strict().DecodeString(receipt)
	if err != nil || len(buf) != receiptPayload+receiptMAC || buf[0] != receiptVersion || buf[1]&^(receiptDLQ|receiptOrdered|receiptShared) != 0 {
		return persistence.Receipt{}, ErrBadReceipt
	}
	if !hmac.Equal(buf[receiptPayload:], r.mac(queueID, buf[:receiptPayload])) {
		return persistence.Receipt{}, ErrBadReceipt
	}
	return receiptOf(buf), nil
}

func receiptOf(buf []byte) persistence.Receipt {
	return persistence.Receipt{
		DLQ:     buf[1]&receiptDLQ != 0,
		Ordered: buf[1]&receiptOrdered != 0,
		Shared:  buf[1]&receiptShared != 0,
		GroupNo: int32(binary.BigEndian.Uint32(buf[2:])),
		ID:      int64(binary.BigEndian.Uint64(buf[6:])),
		LeaseID: int64(binary.BigEndian.Uint64(buf[14:])),
	}
}

func (r *Receipts) mac(queueID string, payload []byte) []byte {
	h := r.macs.Get().(hash.Hash)
	h.Reset()
	_, _ = io.WriteString(h, queueID)
	h.Write([]byte{0})
	h.Write(payload)
	var sum [sha256.Size]byte
	out := h.Sum(sum[:0])[:receiptMAC]
	r.macs.Put(h)
	return out
}

// Peek reads what a receipt names without checking its signature (for echoing the id of an entry that the
// store already accepted under a verified receipt).
func (r *Receipts) Peek(receipt string) (persistence.Receipt, bool) {
	buf, err := base64.RawURLEncoding.DecodeString(receipt)
	if err != nil || len(buf) != receiptPayload+receiptMAC {
		return persistence.Receipt{}, false
	}
	return receiptOf(buf), true
}
