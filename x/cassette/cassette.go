package cassette

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
	"gopkg.in/dnaeon/go-vcr.v4/pkg/recorder"
)

// Mode says whether a Recorder replays a cassette or records one.
type Mode int

const (
	// Replay (the zero value) serves every request from the cassette and
	// never touches the network.
	Replay Mode = iota
	// Record sends every request to the real server and writes the
	// cassette, scrubbed, when the Recorder stops.
	Record
)

func (m Mode) String() string {
	switch m {
	case Replay:
		return "replay"
	case Record:
		return "record"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Redacted replaces every scrubbed value in a cassette.
const Redacted = "REDACTED"

// DefaultScrubHeaders are the headers whose values never reach a cassette,
// whatever the options say.
var DefaultScrubHeaders = []string{
	"Authorization", "Proxy-Authorization", "Api-Key", "X-Api-Key",
	"Anthropic-Api-Key", "X-Goog-Api-Key", "Cookie", "Set-Cookie",
}

// Errors, for errors.Is.
var (
	// ErrOption: an option was given a value it does not take.
	ErrOption = errors.New("cassette: invalid option")
	// ErrNotFound: replay was asked of a cassette file that does not exist.
	ErrNotFound = errors.New("cassette: no such cassette")
	// ErrCorrupt: the cassette file is not a cassette this package can replay.
	ErrCorrupt = errors.New("cassette: corrupted cassette")
	// ErrNoInteraction: a request the cassette holds no answer for; the
	// error is a *MissError.
	ErrNoInteraction = errors.New("cassette: no recorded interaction")
	// ErrStopped: a request came after Stop.
	ErrStopped = errors.New("cassette: recorder stopped")
)

// headers of lode's own in a cassette or on the way to it.
const (
	// timingHeader holds, on a recorded event-stream response, the
	// milliseconds from the response headers to the end of each event.
	timingHeader = "Lode-Cassette-Event-Ms"
	// seqHeader ties a request in flight to its capture while recording;
	// it never leaves the process and never reaches the file.
	seqHeader = "Lode-Cassette-Seq"
	// cutHeader marks a response the client stopped reading, by ending
	// its request's context, before the server ended it: replay holds
	// it open after its last byte until the request's context ends, as
	// the server did.
	cutHeader = "Lode-Cassette-Cut"
)

type config struct {
	mode         Mode
	transport    http.RoundTripper
	scrubHeaders []string
	scrubFields  [][]string
	timing       bool
	secrets      []string
	problems     []error
}

// Option configures a Recorder.
type Option func(*config)

// WithMode chooses between Replay (the default) and Record.
func WithMode(m Mode) Option {
	return func(c *config) {
		if m != Replay && m != Record {
			c.problems = append(c.problems, fmt.Errorf("%w: WithMode(%d): use Replay or Record", ErrOption, int(m)))
			return
		}
		c.mode = m
	}
}

// WithTransport sets the transport that reaches the real server while
// recording; nil means http.DefaultTransport. Replay never uses it.
func WithTransport(rt http.RoundTripper) Option { return func(c *config) { c.transport = rt } }

// WithScrubHeaders adds request and response headers whose values are
// replaced by Redacted before anything is written, beside
// DefaultScrubHeaders. Names are case-insensitive.
func WithScrubHeaders(names ...string) Option {
	return func(c *config) {
		for _, n := range names {
			if strings.TrimSpace(n) == "" {
				c.problems = append(c.problems, fmt.Errorf("%w: WithScrubHeaders: a blank header name", ErrOption))
				continue
			}
			c.scrubHeaders = append(c.scrubHeaders, n)
		}
	}
}

// WithScrubFields adds JSON body fields, as dot-separated paths of object
// keys ("user", "metadata.session_token"), whose values are replaced by
// Redacted in requests and responses (each event of an event stream too)
// before anything is written. Replay matches a request with the same
// fields scrubbed, so a field whose value changes from run to run (a
// secret, a nonce) can be scrubbed to leave it out of matching.
func WithScrubFields(paths ...string) Option {
	return func(c *config) {
		for _, p := range paths {
			parts := strings.Split(p, ".")
			if slicesContainEmpty(parts) {
				c.problems = append(c.problems, fmt.Errorf("%w: WithScrubFields(%q): a path is object keys joined by dots", ErrOption, p))
				continue
			}
			c.scrubFields = append(c.scrubFields, parts)
		}
	}
}

func slicesContainEmpty(parts []string) bool {
	for _, p := range parts {
		if p == "" {
			return true
		}
	}
	return false
}

// WithTiming keeps time: while recording, it notes when each response
// began and when each event of an event stream arrived; on replay, it
// waits as long again before serving each. Without it, a cassette holds no
// times and replays as fast as it is read.
func WithTiming(on bool) Option { return func(c *config) { c.timing = on } }

// Recorder is an http.RoundTripper that records a session into a cassette
// file or replays one from it. It is safe for concurrent use.
type Recorder struct {
	path string
	cfg  config
	rec  *recorder.Recorder
	// tape is the cassette as loaded, for replay's miss diagnostics.
	tape *vcr.Cassette
	norm *normCache
	// secrets are the values never written, learned from the traffic
	// and given by WithSecrets and AddSecrets.
	secrets secretSet

	mu      sync.Mutex
	used    map[int]bool
	pending map[string]*capture
	// order is when each recorded interaction's request was made: go-vcr
	// keeps them in the order their responses ended.
	order   map[*vcr.Interaction]int64
	stopped bool
	// served is the Date of the newest response replayed, for Clock.
	served   time.Time
	seq      atomic.Int64
	inFlight sync.WaitGroup
}

// New returns a Recorder for the cassette file at path (go-vcr's YAML
// format, version 2). Replay loads the file at once and fails with
// ErrNotFound or ErrCorrupt, naming the file; Record overwrites it at Stop.
func New(path string, opts ...Option) (*Recorder, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if path == "" {
		cfg.problems = append(cfg.problems, fmt.Errorf("%w: no cassette path", ErrOption))
	}
	if len(cfg.problems) > 0 {
		return nil, errors.Join(cfg.problems...)
	}
	r := &Recorder{path: path, cfg: cfg, norm: newNormCache(cfg.scrubFields), used: map[int]bool{}, pending: map[string]*capture{}, order: map[*vcr.Interaction]int64{}}
	for _, v := range cfg.secrets {
		r.secrets.add(v, true)
	}
	fs := fileFS{path: path}
	vopts := []recorder.Option{
		recorder.WithFS(fs),
		recorder.WithMatcher(r.match),
		recorder.WithSkipRequestLatency(!cfg.timing),
	}
	switch cfg.mode {
	case Replay:
		tape, err := load(path)
		if err != nil {
			return nil, err
		}
		r.tape = tape
		vopts = append(vopts,
			recorder.WithMode(recorder.ModeReplayOnly),
			recorder.WithHook(r.replayed, recorder.BeforeResponseReplayHook))
	case Record:
		base := cfg.transport
		if base == nil {
			base = http.DefaultTransport
		}
		vopts = append(vopts,
			recorder.WithMode(recorder.ModeRecordOnly),
			recorder.WithRealTransport(&liveTransport{r: r, base: base}),
			recorder.WithMarshalFunc(r.marshal),
			recorder.WithHook(r.captured, recorder.AfterCaptureHook))
	}
	rec, err := recorder.New(path, vopts...)
	if err != nil {
		return nil, fmt.Errorf("cassette: %s: %w", path, err)
	}
	r.rec = rec
	return r, nil
}

// Path is the cassette file.
func (r *Recorder) Path() string { return r.path }

// Mode is what the Recorder does.
func (r *Recorder) Mode() Mode { return r.cfg.mode }

// Client returns an http.Client whose transport is r.
func (r *Recorder) Client() *http.Client { return &http.Client{Transport: r} }

// Stop waits for the recordings in flight (each ends when its server ends
// the response or its request's context ends) and, when recording, writes
// the cassette. Requests after Stop fail with ErrStopped. Stopping twice
// does nothing more.
func (r *Recorder) Stop() error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	r.mu.Unlock()
	r.inFlight.Wait()
	if err := r.rec.Stop(); err != nil {
		return fmt.Errorf("cassette: writing %s: %w", r.path, err)
	}
	return nil
}

// RoundTrip records or replays one request.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: %s %s", ErrStopped, req.Method, req.URL)
	}
	r.inFlight.Add(1)
	r.mu.Unlock()
	if standaloneStream(req) {
		r.inFlight.Done()
		return methodNotAllowed(req), nil
	}
	if r.cfg.mode == Record {
		return r.record(req, body)
	}
	defer r.inFlight.Done()
	return r.replay(req, body)
}

// standaloneStream reports an MCP client opening the session's standalone
// event stream (a GET that stays open for server-initiated messages). It
// has no end to record, so both modes answer it as a server without one
// does, with 405, which the MCP client takes in its stride; server
// notifications on that stream (list_changed) are not recorded.
func standaloneStream(req *http.Request) bool {
	return req.Method == http.MethodGet && req.Header.Get("Mcp-Session-Id") != "" &&
		strings.Contains(req.Header.Get("Accept"), "text/event-stream")
}

func methodNotAllowed(req *http.Request) *http.Response {
	const msg = "lode cassette: no standalone event stream\n"
	return &http.Response{
		Status: "405 Method Not Allowed", StatusCode: http.StatusMethodNotAllowed,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Allow": {"POST, DELETE"}, "Content-Type": {"text/plain; charset=utf-8"}},
		Body:          io.NopCloser(strings.NewReader(msg)),
		ContentLength: int64(len(msg)),
		Request:       req,
	}
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("cassette: reading the request body: %w", err)
	}
	return b, nil
}

// withBody is a clone of req carrying body and ctx.
func withBody(ctx context.Context, req *http.Request, body []byte) *http.Request {
	out := req.Clone(ctx)
	if body == nil {
		out.Body = http.NoBody
		out.ContentLength = 0
		out.GetBody = nil
		return out
	}
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return out
}

// fileFS gives go-vcr the one file at path, whatever name it asks for
// (it adds ".yaml" to names), and writes it whole or not at all.
type fileFS struct{ path string }

func (f fileFS) ReadFile(string) ([]byte, error) { return os.ReadFile(f.path) }

func (f fileFS) IsFileExists(string) bool {
	_, err := os.Stat(f.path)
	return err == nil
}

func (f fileFS) WriteFile(_ string, data []byte) error {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".cassette-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.path)
}
