// Package jsonx appends JSON values to byte slices for the hot paths that encode by hand instead of through
// encoding/json's reflection (the GetMessages response, the stored attributes and metadata of a message). Its
// output is byte-for-byte what encoding/json produces for the same value. It stands apart from package wire
// because the data plane's domain (messaging) encodes what it stores with it, below the wire formats.
package jsonx

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasByte is non-zero when a byte of w equals c (exact: see "Determine if a word has a byte equal to n").
func hasByte(w uint64, c byte) uint64 {
	v := w ^ (lsb * uint64(c))
	return (v - lsb) &^ v & msb
}

// plain reports whether none of the eight bytes of w needs escaping: ASCII from 0x20 on, except '"', '\\', '<',
// '>' and '&'.
func plain(w uint64) bool {
	return (w-0x20*lsb)&^w&msb|w&msb|hasByte(w, '"')|hasByte(w, '\\')|hasByte(w, '<')|hasByte(w, '>')|hasByte(w, '&') == 0
}

// load64 reads eight bytes of s from i, little-endian (the compiler merges the loads into one).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// AppendString appends s as a JSON string, escaped exactly as encoding/json.Marshal escapes it (HTML characters
// as \u003c, \u003e and \u0026, U+2028 and U+2029, invalid UTF-8 as \ufffd).
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start, i := 0, 0
	for i < len(s) {
		if i+8 <= len(s) && plain(load64(s, i)) {
			i += 8
			continue
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat appends f as encoding/json.Marshal writes a float64: the shortest representation that reads back
// as f, in exponent form below 1e-6 and from 1e21 on (with the exponent's leading zero dropped). f must be finite.
func AppendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
