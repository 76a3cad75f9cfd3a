package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeIO serves one session over r and w, one JSON-RPC message per line,
// as ServeStdio does over stdin and stdout; r is closed when the session
// ends if it is an io.Closer, so that a read in progress returns.
//
// A line that is not JSON is answered with a parse error (-32700), and one
// that is JSON but not a JSON-RPC message — a number, an object without
// "jsonrpc": "2.0", a batch (MCP has had none since 2025-06-18) — or that
// reuses the id of a request still in progress, or is longer than
// WithMaxBodyBytes, with an invalid-request error (-32600); the id is null
// unless the line had a usable one. Either way the session goes on. When r
// ends, every request already read is still answered before ServeIO
// returns nil; requests the server sent the client and that are still
// unanswered then fail. Messages are written to w whole, one per line,
// never interleaved.
func (s *Server) ServeIO(ctx context.Context, r io.Reader, w io.Writer) error {
	limit := min(s.maxBody, 1<<30)
	return s.Run(ctx, &lineTransport{r: r, w: w, max: int(limit)})
}

// lineTransport is the server side of MCP over a byte stream. The go-sdk's
// IOTransport ends the session at the first line it cannot decode and, at
// the end of input, drops the replies of requests still running; this one
// does neither.
type lineTransport struct {
	r   io.Reader
	w   io.Writer
	max int
}

func (t *lineTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{
		r: t.r, w: t.w, max: t.max,
		in:       make(chan jsonrpc.Message),
		closed:   make(chan struct{}),
		drained:  make(chan struct{}),
		pending:  make(map[jsonrpc.ID]bool),
		outgoing: make(map[jsonrpc.ID]bool),
	}
	go c.readLoop()
	return c, nil
}

// errRejected makes the go-sdk fail one outgoing request without taking
// the connection down (its code is the SDK's "rejected by transport").
var errRejected = &jsonrpc.Error{Code: codeRejected, Message: "rejected by transport"}

type lineConn struct {
	r   io.Reader
	w   io.Writer
	max int

	wmu sync.Mutex // one whole message per Write on w

	in        chan jsonrpc.Message // closed when input ends
	closed    chan struct{}
	closeOnce sync.Once

	mu            sync.Mutex
	pending       map[jsonrpc.ID]bool // calls read and not yet answered
	outgoing      map[jsonrpc.ID]bool // calls sent to the client and not yet answered
	ended         bool                // input ended, with readErr
	readErr       error
	drained       chan struct{} // closed once input ended and pending is empty
	drainedClosed bool
}

func (c *lineConn) SessionID() string { return "" }

// readLoop frames the input by line, answers the lines that are not
// messages itself, and hands the others to Read.
func (c *lineConn) readLoop() {
	defer close(c.in)
	br := bufio.NewReaderSize(c.r, min(max(c.max+2, 16), 64<<10))
	for n := 1; ; n++ {
		line, tooLong, err := readLine(br, c.max)
		var msg jsonrpc.Message
		if tooLong {
			c.refuse(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: line %d is longer than %d bytes", n, c.max))
		} else {
			msg = c.parse(n, line)
		}
		if msg != nil {
			select {
			case c.in <- msg:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			c.mu.Lock()
			c.ended, c.readErr = true, err
			c.checkDrained()
			c.mu.Unlock()
			return
		}
	}
}

// readLine reads one line without its newline, keeping at most limit bytes
// of it in memory: a line longer than limit is read to its end and reported as
// tooLong.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			n := len(line) + len(chunk)
			if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
				n--
			}
			if n > limit {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, tooLong, err
		}
	}
}

// parse decodes line n, or answers it with an error and returns nil.
func (c *lineConn) parse(n int, line []byte) jsonrpc.Message {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	// The go-sdk's decoder would take the first of two values on a line.
	if !json.Valid(line) {
		var v any
		jerr := json.Unmarshal(line, &v)
		c.refuse(jsonrpc.ID{}, jsonrpc.CodeParseError, fmt.Sprintf("parse error: line %d is not JSON: %v", n, jerr))
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		var why string
		switch line[0] {
		case '[':
			why = "is a batch (a JSON array); MCP takes one message per line"
		case '{':
			why = "is not a JSON-RPC 2.0 message: " + err.Error()
		default:
			why = "is not a JSON object"
		}
		c.refuse(idOf(line), jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: line %d %s", n, why))
		return nil
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if !m.IsCall() {
			break
		}
		c.mu.Lock()
		dup := c.pending[m.ID]
		c.pending[m.ID] = true
		c.mu.Unlock()
		if dup {
			// Not answered under that id: the client would take it for
			// the answer to the request in progress.
			c.refuse(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: line %d reuses the id %v of a request still in progress", n, idText(m.ID)))
			return nil
		}
	case *jsonrpc.Response:
		c.mu.Lock()
		delete(c.outgoing, m.ID)
		c.mu.Unlock()
	}
	return msg
}

// idOf returns the id of a message that could not be decoded, when it has
// a usable one.
func idOf(line []byte) jsonrpc.ID {
	var probe struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &probe) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(probe.ID)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

func idText(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

// refuse answers a line that is not a message. The go-sdk's encoder omits
// a null id, which an error reply must carry, hence this one struct.
func (c *lineConn) refuse(id jsonrpc.ID, code int64, message string) {
	b, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id.Raw(), &jsonrpc.Error{Code: code, Message: message}})
	if err == nil {
		// A broken output also fails the session's next write, which ends it.
		_ = c.write(b)
	}
}

func (c *lineConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}

// checkDrained closes drained once input has ended and every call read has
// been answered. c.mu is held.
func (c *lineConn) checkDrained() {
	if c.ended && len(c.pending) == 0 && !c.drainedClosed {
		c.drainedClosed = true
		close(c.drained)
	}
}

// Read returns the next message. Once input ends, it first fails the
// server's calls the client can no longer answer, then waits until every
// call read has been answered before it reports the end: the go-sdk stops
// writing replies as soon as Read fails.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg, ok := <-c.in:
		if ok {
			return msg, nil
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	}
	c.mu.Lock()
	for id := range c.outgoing {
		delete(c.outgoing, id)
		c.mu.Unlock()
		return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client closed its input before answering"}}, nil
	}
	c.mu.Unlock()
	select {
	case <-c.drained:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return nil, c.readErr
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.mu.Lock()
		delete(c.pending, m.ID)
		c.checkDrained()
		c.mu.Unlock()
	case *jsonrpc.Request:
		if m.IsCall() {
			c.mu.Lock()
			ended := c.ended
			if !ended {
				c.outgoing[m.ID] = true
			}
			c.mu.Unlock()
			if ended {
				return fmt.Errorf("mcp: %s: the client closed its input and cannot answer: %w", m.Method, errRejected)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		c.forget(msg)
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err == nil {
		err = c.write(b)
	}
	if err != nil {
		c.forget(msg)
	}
	return err
}

// forget stops waiting for the answer to a call that was not sent.
func (c *lineConn) forget(msg jsonrpc.Message) {
	if m, ok := msg.(*jsonrpc.Request); ok && m.IsCall() {
		c.mu.Lock()
		delete(c.outgoing, m.ID)
		c.mu.Unlock()
	}
}

// Close stops reading. Closing r is what unblocks a read in progress; an
// error doing so is not the session's.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if rc, ok := c.r.(io.Closer); ok {
			_ = rc.Close()
		}
	})
	return nil
}
