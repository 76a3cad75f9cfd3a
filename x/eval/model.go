package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/cassette"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/script"
)

// EnvLive is the variable that lets cases with a Live model run: "1" runs
// them, anything else skips them.
const EnvLive = "LODE_EVAL_LIVE"

// ErrSkip matches the error a Model's Open returns when the case should be
// skipped rather than failed (a live model nobody asked for).
var ErrSkip = errors.New("eval: case skipped")

// Model is where a case's answers come from. Open is called once per run
// of the case; close, when not nil, is called after the run (a cassette
// being recorded is written then).
type Model interface {
	Open(ctx context.Context) (p provider.Provider, close func() error, err error)
}

// ModelFunc adapts a function to a Model.
type ModelFunc func(ctx context.Context) (provider.Provider, func() error, error)

// Open calls f.
func (f ModelFunc) Open(ctx context.Context) (provider.Provider, func() error, error) { return f(ctx) }

// Connect builds a provider that sends its requests through client; the
// cassette sources give it a client whose transport replays (or records).
type Connect func(client *http.Client) (provider.Provider, error)

// OpenAI connects the chat-completions adapter for model through the
// client, with a placeholder key and no environment read, so that a replay
// needs no credentials. opts come after and may change anything (the base
// URL, streaming).
func OpenAI(model string, opts ...openai.Option) Connect {
	return func(client *http.Client) (provider.Provider, error) {
		all := append([]openai.Option{
			openai.WithModel(model), openai.WithAPIKey("sk-eval"), openai.WithHTTPClient(client),
			openai.WithEnv(func(string) string { return "" }), openai.WithMaxRetries(0),
		}, opts...)
		return openai.New(all...)
	}
}

// Anthropic connects the Messages API adapter for model through the
// client, with a placeholder key, no environment read and no retries, as
// OpenAI does. Through a Cassette, the adapter's clock is the cassette's
// (cassette.Recorder.Clock): a recorded code execution container is
// judged by the recording's time, so a replay long after still sends the
// requests that were recorded. opts come after and may change anything.
func Anthropic(model string, opts ...anthropic.Option) Connect {
	return func(client *http.Client) (provider.Provider, error) {
		all := []anthropic.Option{
			anthropic.WithModel(model), anthropic.WithAPIKey("sk-ant-eval"), anthropic.WithHTTPClient(client),
			anthropic.WithEnv(func(string) string { return "" }), anthropic.WithMaxRetries(0),
		}
		if rec, ok := client.Transport.(*cassette.Recorder); ok {
			all = append(all, anthropic.WithClock(rec.Clock()))
		}
		return anthropic.New(append(all, opts...)...)
	}
}

// Scripted plays steps with x/provider/script: each run of the case
// starts the script from its first step. model names the model the
// provider says it is, for a Pricer; "" leaves it unnamed.
func Scripted(model string, steps ...script.Step) Model {
	return ModelFunc(func(context.Context) (provider.Provider, func() error, error) {
		var opts []script.Option
		if model != "" {
			opts = append(opts, script.WithModel(model))
		}
		return script.New(steps, opts...), nil, nil
	})
}

// Cassette replays the x/cassette file at path through the provider
// connect builds: each request must match a recorded one (method, URL and
// body), so a change in what the agent sends fails the case with the
// first difference. With LODE_RECORD=1 it records instead, as
// cassette.New does; opts are the cassette's.
func Cassette(path string, connect Connect, opts ...cassette.Option) Model {
	return ModelFunc(func(context.Context) (provider.Provider, func() error, error) {
		rec, err := cassette.New(path, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("eval: %w", err)
		}
		p, err := connect(rec.Client())
		if err != nil {
			_ = rec.Stop()
			return nil, nil, fmt.Errorf("eval: cassette %s: %w", path, err)
		}
		return p, rec.Stop, nil
	})
}

// Recorded answers the n-th request with the n-th recorded response of the
// go-vcr cassette at path, whatever the request says. It is for
// recordings made by another client (the public recordings of other
// libraries), whose requests lode would never send byte for byte; the
// answers are still a real model's. A request past the last recorded
// response fails, and so does a run that leaves responses unused: either
// way the agent took another path than the recorded session.
func Recorded(path string, connect Connect) Model {
	return ModelFunc(func(context.Context) (provider.Provider, func() error, error) {
		rt, err := loadInOrder(path)
		if err != nil {
			return nil, nil, err
		}
		p, err := connect(&http.Client{Transport: rt})
		if err != nil {
			return nil, nil, fmt.Errorf("eval: recording %s: %w", path, err)
		}
		return p, rt.unused, nil
	})
}

// Live runs the case on the provider connect returns, only when
// LODE_EVAL_LIVE=1 (it costs money and is not repeatable); otherwise the
// case is skipped, saying so.
func Live(connect func(ctx context.Context) (provider.Provider, error)) Model {
	return ModelFunc(func(ctx context.Context) (provider.Provider, func() error, error) {
		if os.Getenv(EnvLive) != "1" {
			return nil, nil, fmt.Errorf("%w: a live model runs only with %s=1", ErrSkip, EnvLive)
		}
		p, err := connect(ctx)
		return p, nil, err
	})
}

// vcrFile is the part of a go-vcr cassette Recorded reads.
type vcrFile struct {
	Interactions []struct {
		Response struct {
			Body    string              `yaml:"body"`
			Headers map[string][]string `yaml:"headers"`
			Code    int                 `yaml:"code"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

type inOrder struct {
	path string
	file vcrFile
	mu   sync.Mutex
	next int
}

func loadInOrder(path string) (*inOrder, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: recording: %w", err)
	}
	rt := &inOrder{path: path}
	if err := yaml.Unmarshal(b, &rt.file); err != nil {
		return nil, fmt.Errorf("eval: recording %s: %w", path, err)
	}
	if len(rt.file.Interactions) == 0 {
		return nil, fmt.Errorf("eval: recording %s holds no interaction", path)
	}
	return rt, nil
}

// unused reports the responses no request asked for.
func (r *inOrder) unused() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.file.Interactions); r.next < n {
		return fmt.Errorf("eval: recording %s holds %d responses; the run asked for %d", r.path, n, r.next)
	}
	return nil
}

func (r *inOrder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	r.mu.Lock()
	n := r.next
	r.next++
	r.mu.Unlock()
	if n >= len(r.file.Interactions) {
		return nil, fmt.Errorf("eval: recording %s holds %d responses; request %d has none", r.path, len(r.file.Interactions), n+1)
	}
	in := r.file.Interactions[n].Response
	h := http.Header{}
	for k, vs := range in.Headers {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	code := in.Code
	if code == 0 {
		code = http.StatusOK
	}
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(in.Body)),
		ContentLength: int64(len(in.Body)), Request: req,
	}, nil
}
