package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"

	"github.com/lodeworks/lode/ledger"
)

// A journal is a sequence of lines, one record each:
//
//	LLLLLLLL CCCCCCCC {json}\n
//
// L is the length of the JSON payload and C its CRC-32C, both in eight
// lower-case hex digits. The length finds the end of a record without
// trusting its content, the checksum tells a whole record from a torn or
// damaged one, and the payload stays readable with ordinary tools.
//
// The first record is the thread header; each later record is a turn or a
// metadata value, numbered from 1 by its field "n".

const (
	formatVersion = 1
	prefixLen     = 18 // "LLLLLLLL CCCCCCCC "
	maxRecord     = 1<<32 - 1

	recThread = "thread"
	recTurn   = "turn"
	recMeta   = "meta"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type headerRec struct {
	T      string            `json:"t"`
	Format int               `json:"format"`
	ID     string            `json:"id"`
	Time   time.Time         `json:"time"`
	Meta   map[string]string `json:"meta,omitempty"`
}

type metaRec struct {
	T     string `json:"t"`
	N     int64  `json:"n"`
	Key   string `json:"key"`
	Value string `json:"value"`
}

// anyRec decodes every kind of record.
type anyRec struct {
	T      string            `json:"t"`
	N      int64             `json:"n"`
	Format int               `json:"format"`
	ID     string            `json:"id"`
	Time   time.Time         `json:"time"`
	Meta   map[string]string `json:"meta"`
	Turn   *ledger.Turn      `json:"turn"`
	Key    string            `json:"key"`
	Value  string            `json:"value"`
}

// frame appends payload as one journal line to dst.
func frame(dst, payload []byte) ([]byte, error) {
	if len(payload) > maxRecord {
		return nil, fmt.Errorf("record of %d bytes exceeds the journal limit of %d", len(payload), maxRecord)
	}
	if bytes.IndexByte(payload, '\n') >= 0 {
		return nil, errors.New("record payload contains a newline")
	}
	dst = appendHex8(dst, uint32(len(payload)))
	dst = append(dst, ' ')
	dst = appendHex8(dst, crc32.Checksum(payload, castagnoli))
	dst = append(dst, ' ')
	dst = append(dst, payload...)
	return append(dst, '\n'), nil
}

func appendHex8(dst []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for i := 7; i >= 0; i-- {
		dst = append(dst, digits[(v>>(4*i))&0xf])
	}
	return dst
}

func parseHex8(b []byte) (uint32, bool) {
	var v uint32
	for _, c := range b[:8] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint32(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// encodeRecord renders one change as a journal line.
func encodeRecord(r ledger.Record) ([]byte, error) {
	if r.Turn != nil {
		turn, err := r.Turn.MarshalJSON()
		if err != nil {
			return nil, err
		}
		return appendTurnRecord(nil, r.Version, turn)
	}
	payload, err := json.Marshal(metaRec{T: recMeta, N: r.Version, Key: r.Key, Value: r.Value})
	if err != nil {
		return nil, err
	}
	return frame(make([]byte, 0, len(payload)+prefixLen+1), payload)
}

// appendTurnRecord appends to dst the journal line of the turn whose JSON
// is turn, as the n-th record, framing it in place.
func appendTurnRecord(dst []byte, n int64, turn []byte) ([]byte, error) {
	if dst == nil {
		dst = make([]byte, 0, len(turn)+prefixLen+40)
	}
	start := len(dst)
	dst = append(dst, "00000000 00000000 "...)
	dst = append(dst, `{"t":"turn","n":`...)
	dst = strconv.AppendInt(dst, n, 10)
	dst = append(dst, `,"turn":`...)
	dst = append(dst, turn...)
	dst = append(dst, '}')
	payload := dst[start+prefixLen:]
	if len(payload) > maxRecord {
		return dst[:start], fmt.Errorf("record of %d bytes exceeds the journal limit of %d", len(payload), maxRecord)
	}
	if bytes.IndexByte(payload, '\n') >= 0 {
		return dst[:start], errors.New("record payload contains a newline")
	}
	appendHex8(dst[start:start], uint32(len(payload)))
	appendHex8(dst[start+9:start+9], crc32.Checksum(payload, castagnoli))
	return append(dst, '\n'), nil
}

// errShort marks a record cut off by the end of the data.
var errShort = errors.New("record cut off by the end of the journal")

// nextRecord reads the record at the start of b and returns its payload and
// the length of its line.
func nextRecord(b []byte) ([]byte, int, error) {
	if len(b) < prefixLen {
		if bytes.IndexByte(b, '\n') >= 0 {
			return nil, 0, errors.New("line too short for a record header")
		}
		return nil, 0, errShort
	}
	n, ok1 := parseHex8(b[0:8])
	sum, ok2 := parseHex8(b[9:17])
	if !ok1 || !ok2 || b[8] != ' ' || b[17] != ' ' {
		return nil, 0, errors.New("malformed record header (want length and checksum in hex)")
	}
	end := prefixLen + int64(n)
	if end >= int64(len(b)) {
		return nil, 0, errShort
	}
	if b[end] != '\n' {
		return nil, 0, fmt.Errorf("record of %d bytes is not followed by a newline", n)
	}
	payload := b[prefixLen:end]
	if got := crc32.Checksum(payload, castagnoli); got != sum {
		return nil, 0, fmt.Errorf("checksum mismatch (stored %08x, computed %08x)", sum, got)
	}
	return payload, int(end) + 1, nil
}

// problem is the first record of a journal that cannot be used.
type problem struct {
	line   int
	offset int64
	reason string
	tail   bool // nothing valid follows it: a torn write
}

// parsed is what a journal holds up to its first problem.
type parsed struct {
	header  headerRec
	snap    ledger.Snapshot
	good    int64 // end of the last usable record
	lines   int   // usable records, header included
	problem *problem
	// raw, when keepRaw is set, holds each turn's JSON as stored (a slice
	// of the data parsed), or nil for a turn stored in another layout.
	keepRaw bool
	raw     [][]byte
}

// parse reads a journal. It never fails: what cannot be used is described
// by the result's problem, and everything before it is in the snapshot.
func parse(data []byte, lenient bool) parsed {
	return parseInto(parsed{}, data, lenient)
}

// parseInto is parse, starting from p's settings.
func parseInto(p parsed, data []byte, lenient bool) parsed {
	p.snap.Metadata = map[string]string{}
	off := 0
	for off < len(data) {
		payload, size, err := nextRecord(data[off:])
		if err == nil {
			err = p.apply(payload, lenient)
		}
		if err != nil {
			p.problem = &problem{line: p.lines + 1, offset: int64(off), reason: err.Error(), tail: !validAfter(data, off)}
			return p
		}
		off += size
		p.lines++
		p.good = int64(off)
	}
	if p.lines == 0 {
		p.problem = &problem{line: 1, offset: 0, reason: "journal has no thread header"}
	}
	return p
}

// own marks a journal whose header names another thread as unusable from
// its first line: a journal copied or renamed from another thread is not
// this one.
func (p *parsed) own(id string) {
	if p.lines > 0 && p.header.ID != id {
		p.problem = &problem{line: 1, reason: fmt.Sprintf("journal belongs to thread %q", p.header.ID)}
		p.lines, p.good, p.snap = 0, 0, ledger.Snapshot{}
	}
}

// unusable reports whether the journal cannot be loaded as it stands:
// there is no usable header, or whole records follow the damage. A torn
// last record after a usable header is not: Load cuts it.
func (p *parsed) unusable() bool {
	return p.problem != nil && (p.lines == 0 || !p.problem.tail)
}

// validAfter reports whether a whole record starts on any line after the
// one at off.
func validAfter(data []byte, off int) bool {
	for {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return false
		}
		off += i + 1
		if _, _, err := nextRecord(data[off:]); err == nil {
			return true
		}
	}
}

func (p *parsed) apply(payload []byte, lenient bool) error {
	var r anyRec
	if n, _, ok := turnRecord(payload); lenient && ok && p.lines > 0 {
		// Listing needs no history: count the turn without decoding it.
		if n != p.snap.Version+1 {
			return fmt.Errorf("record number %d out of sequence (want %d)", n, p.snap.Version+1)
		}
		p.snap.Turns = append(p.snap.Turns, ledger.Turn{})
		p.snap.Version = n
		return nil
	}
	if n, turn, ok := turnRecord(payload); ok && p.lines > 0 {
		// The layout encodeRecord writes: decode the turn alone, skipping
		// one whole pass of the JSON decoder over the record.
		if n != p.snap.Version+1 {
			return fmt.Errorf("record number %d out of sequence (want %d)", n, p.snap.Version+1)
		}
		var t ledger.Turn
		if err := t.UnmarshalJSON(turn); err != nil {
			return fmt.Errorf("record does not decode: %v", err)
		}
		p.snap.Turns = append(p.snap.Turns, t)
		if p.keepRaw {
			p.raw = append(p.raw, turn)
		}
		p.snap.Version = n
		return nil
	}
	if err := json.Unmarshal(payload, &r); err != nil {
		return fmt.Errorf("record does not decode: %v", err)
	}
	if p.lines == 0 {
		if r.T != recThread {
			return fmt.Errorf("first record is %q, want the thread header", r.T)
		}
		if r.Format != formatVersion {
			return fmt.Errorf("journal format %d is not supported (this version reads %d)", r.Format, formatVersion)
		}
		p.header = headerRec{T: r.T, Format: r.Format, ID: r.ID, Time: r.Time, Meta: r.Meta}
		for k, v := range r.Meta {
			p.snap.Metadata[k] = v
		}
		return nil
	}
	if r.N != p.snap.Version+1 {
		return fmt.Errorf("record number %d out of sequence (want %d)", r.N, p.snap.Version+1)
	}
	switch r.T {
	case recTurn:
		if r.Turn == nil {
			return errors.New("turn record has no turn")
		}
		p.snap.Turns = append(p.snap.Turns, *r.Turn)
		if p.keepRaw {
			p.raw = append(p.raw, nil)
		}
	case recMeta:
		p.snap.Metadata[r.Key] = r.Value
	default:
		return fmt.Errorf("unknown record type %q", r.T)
	}
	p.snap.Version = r.N
	return nil
}

// turnRecord splits a turn record laid out as encodeRecord writes it,
// {"t":"turn","n":N,"turn":TURN}, into N and TURN.
func turnRecord(payload []byte) (int64, []byte, bool) {
	rest, ok := bytes.CutPrefix(payload, []byte(`{"t":"turn","n":`))
	if !ok {
		return 0, nil, false
	}
	i := 0
	for i < len(rest) && i < 19 && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	turn, ok := bytes.CutPrefix(rest[i:], []byte(`,"turn":`))
	if !ok || len(turn) < 2 || turn[len(turn)-1] != '}' {
		return 0, nil, false
	}
	return n, turn[:len(turn)-1], true
}
