package recorder

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// appendChunk appends c as a transcript line, the bytes encoding/json's
// Encoder writes for it ({"seq","stream","text","at"}, HTML-safe escaping,
// a newline), without reflection: rendering was half a session end's CPU.
// ok is false, and dst unchanged, for a time encoding/json refuses (a year
// outside 0-9999), which the Encoder skipped too.
// TestAppendChunkIsEncodingJSON and FuzzAppendChunk hold it to that.
func appendChunk(dst []byte, c *Chunk) (_ []byte, ok bool) {
	n := len(dst)
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, c.Seq, 10)
	dst = append(dst, `,"stream":`...)
	dst = appendJSONString(dst, c.Stream)
	dst = append(dst, `,"text":`...)
	dst = appendJSONString(dst, c.Text)
	dst = append(dst, `,"at":"`...)
	at, err := c.At.AppendText(dst) // MarshalJSON's text, and its refusals
	if err != nil {
		return dst[:n], false
	}
	return append(at, "\"}\n"...), true
}

// jsonSafe is the ASCII bytes encoding/json writes as themselves with HTML
// escaping on: every printable one but `"`, `\`, `<`, `>` and `&`.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = !strings.ContainsRune(`"\<>&`, rune(b))
	}
	return t
}()

// appendJSONString is encoding/json's string encoding with HTML escaping:
// \" \\ \b \f \n \r \t, \u00XX for the other control bytes and < > &,
// \ufffd for each byte of invalid UTF-8, \u2028 and \u2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
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
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
