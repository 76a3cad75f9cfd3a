package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// stdioSession is a Server served with ServeIO over in-process pipes, as
// a client on the other end of stdin and stdout sees it.
type stdioSession struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

// serveLines serves reg over pipes; wrap, when not nil, wraps the server's
// input and output.
func serveLines(t *testing.T, reg tool.Registry, wrapIn func(io.Reader) io.Reader, wrapOut func(io.Writer) io.Writer, opts ...mcp.ServerOption) *stdioSession {
	t.Helper()
	srv, err := mcp.NewServer(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var r io.Reader = inR
	if wrapIn != nil {
		r = wrapIn(inR)
	}
	var w io.Writer = outW
	if wrapOut != nil {
		w = wrapOut(outW)
	}
	s := &stdioSession{t: t, in: inW, lines: make(chan string, 256), done: make(chan error, 1)}
	go func() {
		err := srv.ServeIO(context.Background(), r, w)
		inR.Close()
		outW.Close()
		s.done <- err
	}()
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		outR.CloseWithError(io.ErrClosedPipe)
	}()
	t.Cleanup(func() {
		inW.Close()
		<-s.done
		for range s.lines {
		}
	})
	return s
}

func (s *stdioSession) send(lines ...string) {
	s.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(s.in, l+"\n"); err != nil {
			s.t.Fatalf("writing %q: %v", l, err)
		}
	}
}

// next returns the next line the server wrote.
func (s *stdioSession) next() string {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			s.t.Fatal("the server's output ended")
		}
		return l
	case <-time.After(30 * time.Second):
		s.t.Fatal("no line from the server in 30s")
	}
	return ""
}

// initialize runs the MCP handshake.
func (s *stdioSession) initialize() {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if l := s.next(); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":0,"result":`) {
		s.t.Fatalf("initialize answered %s", l)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func echoCall(id any, text string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": text}}})
	return string(b)
}

// reply is what a test reads of one answer.
type reply struct {
	ID     any `json:"id"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeReply(t *testing.T, line string) reply {
	t.Helper()
	var r reply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("the server wrote a line that is not JSON: %q: %v", line, err)
	}
	return r
}

// text returns the text of a tools/call result, or fails.
func (r reply) text(t *testing.T) string {
	t.Helper()
	if r.Result == nil || len(r.Result.Content) != 1 {
		t.Fatalf("reply %+v is not a one-text result", r)
	}
	return r.Result.Content[0].Text
}

func TestServeIOAnswersLinesThatAreNotRequests(t *testing.T) {
	const limit = 300
	exact := echoCall(99, strings.Repeat("x", limit-len(echoCall(99, ""))))
	cases := []struct {
		name, line string
		want       string // the exact reply; "" for none
	}{
		{"not JSON", "hello", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: line 3 is not JSON: invalid character 'h' looking for beginning of value"}}`},
		{"cut short", `{"jsonrpc":"2.0","id":5,"method":`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: line 3 is not JSON: unexpected end of JSON input"}}`},
		{"two values", `{"jsonrpc":"2.0","id":5,"method":"ping"} {}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: line 3 is not JSON: invalid character '{' after top-level value"}}`},
		{"number", "42", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: line 3 is not a JSON object"}}`},
		{"string", `"ping"`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: line 3 is not a JSON object"}}`},
		{"null", `null`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: line 3 is not a JSON object"}}`},
		{"empty batch", `[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: line 3 is a batch (a JSON array); MCP takes one message per line"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: line 3 is a batch (a JSON array); MCP takes one message per line"}}`},
		{"empty object", `{}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: line 3 is not a JSON-RPC 2.0 message: invalid message version tag \"\"; expected \"2.0\""}}`},
		{"no version", `{"id":3,"method":"ping"}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request: line 3 is not a JSON-RPC 2.0 message: invalid message version tag \"\"; expected \"2.0\""}}`},
		{"old version", `{"jsonrpc":"1.0","id":"a","method":"ping"}`, `{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"invalid request: line 3 is not a JSON-RPC 2.0 message: invalid message version tag \"1.0\"; expected \"2.0\""}}`},
		{"object id", `{"jsonrpc":"2.0","id":{"n":1},"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: line 3 is not a JSON-RPC 2.0 message: parse error: invalid ID type map[string]interface {}"}}`},
		{"neither request nor response", `{"jsonrpc":"2.0","params":{}}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: line 3 is not a JSON-RPC 2.0 message: invalid request"}}`},
		{"method not a string", `{"jsonrpc":"2.0","id":8,"method":1}`, `{"jsonrpc":"2.0","id":8,"error":{"code":-32600,"message":"invalid request: line 3 is not a JSON-RPC 2.0 message: unmarshaling jsonrpc message: json: cannot unmarshal \"1\" into Go value of type string"}}`},
		{"too long", echoCall(9, strings.Repeat("y", 2*limit)), `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: line 3 is longer than 300 bytes"}}`},
		{"blank", "  \t\r", ""},
		{"exactly the limit", exact, `{"jsonrpc":"2.0","id":99,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", limit-len(echoCall(99, ""))) + `"}]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serveLines(t, demoRegistry(t), nil, nil, mcp.WithMaxBodyBytes(limit))
			s.initialize()
			s.send(tc.line)
			if tc.want != "" {
				if got := s.next(); got != tc.want {
					t.Fatalf("line %q answered\n%s\nwant\n%s", tc.line, got, tc.want)
				}
			}
			// The session goes on.
			s.send(echoCall(1, "still here"))
			if got := decodeReply(t, s.next()); got.ID != 1.0 || got.text(t) != "still here" {
				t.Fatalf("after the bad line: %+v", got)
			}
		})
	}
}

func TestServeIOKeepsServingAfterGarbage(t *testing.T) {
	s := serveLines(t, demoRegistry(t), nil, nil)
	s.initialize()
	s.send(echoCall(2, "before"), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo",`, echoCall(4, "after"))
	got := map[any]reply{}
	for range 3 {
		r := decodeReply(t, s.next())
		got[r.ID] = r
	}
	if r := got[2.0]; r.text(t) != "before" {
		t.Errorf("id 2: %+v", r)
	}
	if r := got[4.0]; r.text(t) != "after" {
		t.Errorf("id 4: %+v", r)
	}
	if r := got[nil]; r.Error == nil || r.Error.Code != -32700 {
		t.Errorf("the garbage line: %+v, want a -32700 error with id null", r)
	}
	s.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if l := s.next(); l != `{"jsonrpc":"2.0","id":5,"result":{}}` {
		t.Fatalf("ping answered %s", l)
	}
}

// eofSignal closes seen when the reader it wraps ends.
type eofSignal struct {
	r    io.Reader
	once sync.Once
	seen chan struct{}
}

func (e *eofSignal) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.once.Do(func() { close(e.seen) })
	}
	return n, err
}

// slowRegistry has a tool "slow" that answers "done n" once release is
// closed, or fails when its context ends first.
func slowRegistry(t *testing.T, release <-chan struct{}, started chan<- int) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	type in struct {
		N int `json:"n"`
	}
	err := tool.RegisterFunc(reg, "slow", "Answers when released", func(ctx context.Context, a in) (string, error) {
		if started != nil {
			started <- a.N
		}
		select {
		case <-release:
			return fmt.Sprintf("done %d", a.N), nil
		case <-ctx.Done():
			return "", fmt.Errorf("cancelled: %w", context.Cause(ctx))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func slowCall(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{"n":%d}}}`, id, id)
}

// Requests read before the end of input are all answered, and only then
// does ServeIO return.
func TestServeIOAnswersEveryRequestReadBeforeEOF(t *testing.T) {
	const n = 5
	release := make(chan struct{})
	eof := &eofSignal{seen: make(chan struct{})}
	s := serveLines(t, slowRegistry(t, release, nil), func(r io.Reader) io.Reader { eof.r = r; return eof }, nil)
	s.initialize()
	for i := range n {
		s.send(slowCall(10 + i))
	}
	s.in.Close()
	<-eof.seen
	close(release)
	var got []string
	for l := range s.lines {
		r := decodeReply(t, l)
		got = append(got, fmt.Sprintf("%v %s", r.ID, r.text(t)))
	}
	sort.Strings(got)
	want := []string{"10 done 10", "11 done 11", "12 done 12", "13 done 13", "14 done 14"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("replies after EOF:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := <-s.done; err != nil {
		t.Fatalf("ServeIO = %v, want nil at the end of input", err)
	}
	s.done <- nil // for the cleanup
}

// overlapWriter records whether two Writes ever overlapped, and whether
// one held anything but whole lines.
type overlapWriter struct {
	w        io.Writer
	inFlight atomic.Int32
	overlap  atomic.Bool
	partial  atomic.Bool
}

func (o *overlapWriter) Write(p []byte) (int, error) {
	if o.inFlight.Add(1) > 1 {
		o.overlap.Store(true)
	}
	defer o.inFlight.Add(-1)
	if len(p) == 0 || p[len(p)-1] != '\n' || !json.Valid(p) {
		o.partial.Store(true)
	}
	return o.w.Write(p)
}

func TestServeIOWritesWholeMessages(t *testing.T) {
	const n = 40
	release := make(chan struct{})
	close(release)
	ow := &overlapWriter{}
	s := serveLines(t, slowRegistry(t, release, nil), nil, func(w io.Writer) io.Writer { ow.w = w; return ow })
	s.initialize()
	go func() {
		for i := range n {
			fmt.Fprintf(s.in, "%s\nnot json %d\n", slowCall(100+i), i)
		}
	}()
	results, parseErrors := 0, 0
	for range 2 * n {
		r := decodeReply(t, s.next())
		switch {
		case r.Result != nil:
			results++
		case r.Error != nil && r.Error.Code == -32700:
			parseErrors++
		}
	}
	if results != n || parseErrors != n {
		t.Fatalf("%d results and %d parse errors, want %d of each", results, parseErrors, n)
	}
	if ow.overlap.Load() || ow.partial.Load() {
		t.Fatalf("writes overlapped (%v) or were not whole lines (%v)", ow.overlap.Load(), ow.partial.Load())
	}
}

// A request reusing the id of one in progress is refused without an id:
// the client would take it for the answer to the first.
func TestServeIORefusesAnIDInProgress(t *testing.T) {
	release := make(chan struct{})
	started := make(chan int, 1)
	s := serveLines(t, slowRegistry(t, release, started), nil, nil)
	s.initialize()
	s.send(slowCall(7))
	<-started
	s.send(echoCall(7, "again"))
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: line 4 reuses the id 7 of a request still in progress"}}`
	if got := s.next(); got != want {
		t.Fatalf("reused id answered\n%s\nwant\n%s", got, want)
	}
	close(release)
	if r := decodeReply(t, s.next()); r.ID != 7.0 || r.text(t) != "done 7" {
		t.Fatalf("the first request: %+v", r)
	}
	// Answered, its id is free again.
	s.send(slowCall(7))
	if r := decodeReply(t, s.next()); r.ID != 7.0 || r.text(t) != "done 7" {
		t.Fatalf("the id reused after its answer: %+v", r)
	}
}

// A tool that asks the client something when the client has closed its
// input gets an error rather than waiting for ever, and its own reply is
// still written.
func TestServeIOFailsCallsToAClientThatStoppedReading(t *testing.T) {
	for _, tc := range []struct {
		name       string
		afterEOF   bool // the tool asks only once the input has ended
		wantOutput []string
	}{
		{"asked before the end", false, []string{
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":20,"result":{"content":[{"type":"text","text":"calling \"ping\": the client closed its input before answering"}],"isError":true}}`,
		}},
		{"asked after the end", true, []string{
			`{"jsonrpc":"2.0","id":20,"result":{"content":[{"type":"text","text":"calling \"ping\": mcp: ping: the client closed its input and cannot answer: rejected by transport"}],"isError":true}}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			reg := tool.NewRegistry()
			err := tool.RegisterFunc(reg, "ask", "Pings the client", func(ctx context.Context, _ struct{}) (string, error) {
				req, ok := mcp.CallRequest(ctx)
				if !ok {
					return "", fmt.Errorf("no MCP request")
				}
				if tc.afterEOF {
					<-release
				}
				if err := req.Session.Ping(ctx, nil); err != nil {
					return "", err
				}
				return "pong", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			eof := &eofSignal{seen: make(chan struct{})}
			s := serveLines(t, reg, func(r io.Reader) io.Reader { eof.r = r; return eof }, nil)
			s.initialize()
			s.send(`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
			if !tc.afterEOF {
				if got := s.next(); got != tc.wantOutput[0] {
					t.Fatalf("the server's request: %s", got)
				}
			}
			s.in.Close()
			<-eof.seen
			close(release)
			var got []string
			if !tc.afterEOF {
				got = append(got, tc.wantOutput[0])
			}
			for l := range s.lines {
				got = append(got, l)
			}
			if strings.Join(got, "\n") != strings.Join(tc.wantOutput, "\n") {
				t.Fatalf("output:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.wantOutput, "\n"))
			}
		})
	}
}
