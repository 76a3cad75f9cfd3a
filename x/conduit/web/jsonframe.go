package web

import (
	"unicode/utf8"
)

// deltaFrame encodes the part {"type":kind,idKey:id,deltaKey:delta} as
// one Server-Sent Event, byte for byte as frame does (keys in order,
// encoding/json's escapes), without building a map and reflecting on it: a
// stream sends one for every token, and what that costs is paid thousands
// of times a second under load. The keys must sort as deltaKey, idKey,
// "type".
func deltaFrame(kind, idKey, id, deltaKey, delta string) []byte {
	n := len(`data: {"":"","":"","type":""}`) + len(kind) + len(idKey) + len(deltaKey) + 2
	n += quotedLen(id) + quotedLen(delta)
	b := make([]byte, 0, n)
	b = append(b, `data: {"`...)
	b = append(b, deltaKey...)
	b = append(b, `":"`...)
	b = appendQuoted(b, delta)
	b = append(b, `","`...)
	b = append(b, idKey...)
	b = append(b, `":"`...)
	b = appendQuoted(b, id)
	b = append(b, `","type":"`...)
	b = append(b, kind...)
	return append(b, "\"}\n\n"...)
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends s as the inside of a JSON string as encoding/json
// writes it: quote, backslash and control characters escaped, <, > and &
// escaped for HTML, U+2028 and U+2029 escaped (JavaScript reads them as
// line ends), and each byte of invalid UTF-8 replaced by U+FFFD.
func appendQuoted(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}

// quotedLen is the length appendQuoted gives s, so that a frame is
// allocated once and its capacity is its length (the stream's queue
// counts the bytes it holds by length).
func quotedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n++
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 5
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5
		case r == '\u2028' || r == '\u2029':
			n += 3
		}
		i += size
	}
	return n
}
