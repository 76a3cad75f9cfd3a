package web

import "github.com/lodeworks/lode/internal/structjson"

// deltaFrame encodes the part {"type":kind,idKey:id,deltaKey:delta} as
// one Server-Sent Event, byte for byte as frame does (keys in order,
// encoding/json's escapes, HTML's included), without building a map and
// reflecting on it: a stream sends one for every token, and what that
// costs is paid thousands of times a second under load. The keys must
// sort as deltaKey, idKey, "type". The frame is allocated once, its
// capacity its length, as the stream's byte count assumes.
func deltaFrame(kind, idKey, id, deltaKey, delta string) []byte {
	n := len(`data: {"":,"":,"type":""}`) + len(deltaKey) + len(idKey) + len(kind) + 2
	n += structjson.StringLen(delta, true) + structjson.StringLen(id, true)
	b := make([]byte, 0, n)
	b = append(b, `data: {"`...)
	b = append(b, deltaKey...)
	b = append(b, `":`...)
	b = structjson.AppendString(b, delta, true)
	b = append(b, `,"`...)
	b = append(b, idKey...)
	b = append(b, `":`...)
	b = structjson.AppendString(b, id, true)
	b = append(b, `,"type":"`...)
	b = append(b, kind...)
	return append(b, "\"}\n\n"...)
}
