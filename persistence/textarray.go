package persistence

import (
	"encoding/binary"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// textArray is a text[] parameter already in PostgreSQL's binary array format (one dimension, no NULLs), built
// once from its strings. pgx encodes a []string element by element into a parameter buffer that it shrinks to
// 256 bytes after every statement, so a put's contents (20–200 × up to 256 KiB) grew that buffer by doubling on
// every insert: a third of ferry's allocated bytes under load. A textArray is appended in one piece. It is a
// struct, not a []byte, so that a connection without registerTextArray fails to encode it instead of sending it
// as an array of bytes.
type textArray struct{ buf *[]byte } // from textArrayBuffers

// textArrayBuffers recycles the buffers textArrays are built in (see releaseTextArray).
var textArrayBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledTextArray keeps the occasional huge batch's buffer out of the pool.
const maxPooledTextArray = 1 << 20

// newTextArray encodes elems as a binary text[] in a pooled buffer; releaseTextArray returns it once the
// statement that used it has been sent.
func newTextArray(elems []string) textArray {
	size := 20 + 4*len(elems)
	for _, e := range elems {
		size += len(e)
	}
	bp := textArrayBuffers.Get().(*[]byte)
	b := (*bp)[:0]
	if cap(b) < size {
		b = make([]byte, 0, size)
	}
	b = binary.BigEndian.AppendUint32(b, 1)                  // dimensions
	b = binary.BigEndian.AppendUint32(b, 0)                  // no NULLs
	b = binary.BigEndian.AppendUint32(b, pgtype.TextOID)     // element type
	b = binary.BigEndian.AppendUint32(b, uint32(len(elems))) // length of the dimension
	b = binary.BigEndian.AppendUint32(b, 1)                  // lower bound
	for _, e := range elems {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	*bp = b
	return textArray{bp}
}

// releaseTextArray returns a's buffer to the pool; a must not be used afterwards.
func releaseTextArray(a textArray) {
	if cap(*a.buf) <= maxPooledTextArray {
		textArrayBuffers.Put(a.buf)
	}
}

// registerTextArray teaches a connection's type map to send a textArray as a text[] parameter as it is (other
// values of text[] keep pgx's own encoding). It runs on every new pool connection (AfterConnect).
func registerTextArray(conn *pgx.Conn) {
	m := conn.TypeMap()
	if t, ok := m.TypeForOID(pgtype.TextArrayOID); ok {
		m.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: textArrayCodec{t.Codec}})
	}
}

// textArrayCodec is text[]'s codec with a plan for textArray values.
type textArrayCodec struct{ pgtype.Codec }

func (c textArrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(textArray); ok && format == pgtype.BinaryFormatCode {
		return textArrayPlan{}
	}
	return c.Codec.PlanEncode(m, oid, format, value)
}

type textArrayPlan struct{}

// Encode appends the array with room to spare, so that the few bytes pgx appends after it (the statement's
// remaining parameters, its result formats) do not make it copy the whole buffer again.
func (textArrayPlan) Encode(value any, buf []byte) ([]byte, error) {
	a := *value.(textArray).buf
	if cap(buf)-len(buf) < len(a) {
		grown := make([]byte, len(buf), len(buf)+len(a)+512)
		copy(grown, buf)
		buf = grown
	}
	return append(buf, a...), nil
}
