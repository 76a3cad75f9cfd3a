package capture

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/lodeworks/lode/internal/secrets"
)

// EnvVar is the standard switch of the OpenTelemetry GenAI
// instrumentations.
const EnvVar = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// DefaultMaxBytes bounds each content attribute when Config.MaxBytes is 0.
const DefaultMaxBytes = 16 << 10

// Redacted stands in a captured attribute for a secret's value.
const Redacted = "[REDACTED]"

// Config is what content a span carries. The zero Config captures
// nothing.
type Config struct {
	// On turns capture on.
	On bool
	// MaxBytes bounds each attribute's JSON; a longer one has its texts
	// cut, each cut marked with TruncatedMarker. Zero means
	// DefaultMaxBytes; negative means no bound.
	MaxBytes int
	// Secrets are values that never leave in a span: each is replaced by
	// Redacted in every form x/cassette scrubs (as it is, JSON- and
	// URL-escaped). Empty values are skipped.
	Secrets []string

	rep *strings.Replacer
}

// ParseEnv reads a value of EnvVar, case-insensitively, as the
// OpenTelemetry GenAI instrumentations write it: "true" and "false" (the
// older ones), or "SPAN_ONLY", "SPAN_AND_EVENT", "EVENT_ONLY" and
// "NO_CONTENT" (the GenAI utilities). "true", "SPAN_ONLY" and
// "SPAN_AND_EVENT" turn capture on; "", "false", "NO_CONTENT" and
// "EVENT_ONLY" leave it off, since lode records content on span
// attributes and emits no gen_ai.client.inference.operation.details
// event (its observers get loop.ContentEvent and loop.ToolContentEvent
// instead). Anything else is an error naming the accepted values.
func ParseEnv(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "span_only", "span_and_event":
		return true, nil
	case "", "false", "no_content", "event_only":
		return false, nil
	}
	return false, fmt.Errorf("capture: %s=%q: want true, false, SPAN_ONLY, SPAN_AND_EVENT, EVENT_ONLY or NO_CONTENT", EnvVar, v)
}

// FromEnv is the Config EnvVar asks for, with the values of the
// environment variables whose names hold a credential (API_KEY, *_TOKEN,
// *_SECRET ...) as its Secrets.
func FromEnv() (Config, error) {
	on, err := ParseEnv(os.Getenv(EnvVar))
	if err != nil || !on {
		return Config{}, err
	}
	return Config{On: true, Secrets: EnvSecrets()}, nil
}

// EnvSecrets are the values of the environment variables whose names say
// they hold a credential.
func EnvSecrets() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if v != "" && secrets.CredentialName(k) {
			out = append(out, v)
		}
	}
	return out
}

type ctxKey struct{}

// With is ctx carrying c, with c's secret scrubber built once.
func With(ctx context.Context, c Config) context.Context {
	if c.On && c.rep == nil {
		c.rep = replacer(c.Secrets)
	}
	return context.WithValue(ctx, ctxKey{}, &c)
}

// From is the Config of ctx; the zero Config when there is none.
func From(ctx context.Context) Config {
	if c, ok := ctx.Value(ctxKey{}).(*Config); ok {
		return *c
	}
	return Config{}
}

func (c Config) limit() int {
	switch {
	case c.MaxBytes == 0:
		return DefaultMaxBytes
	case c.MaxBytes < 0:
		return int(^uint(0) >> 1)
	}
	return c.MaxBytes
}

func (c Config) scrub(s string) string {
	rep := c.rep
	if rep == nil {
		if len(c.Secrets) == 0 {
			return s
		}
		rep = replacer(c.Secrets)
	}
	return rep.Replace(s)
}

func replacer(values []string) *strings.Replacer {
	seen := map[string]bool{}
	var pairs []string
	for _, v := range values {
		if v == "" {
			continue
		}
		for _, f := range secrets.Forms(v) {
			if f != "" && !seen[f] {
				seen[f] = true
				pairs = append(pairs, f, Redacted)
			}
		}
	}
	// Longer forms first: a form inside another must not cut it.
	return strings.NewReplacer(sortPairs(pairs)...)
}

func sortPairs(pairs []string) []string {
	forms := make([]string, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		forms = append(forms, pairs[i])
	}
	sort.SliceStable(forms, func(a, b int) bool { return len(forms[a]) > len(forms[b]) })
	out := make([]string, 0, len(pairs))
	for _, f := range forms {
		out = append(out, f, Redacted)
	}
	return out
}

// Hold keeps back the output content of a turn's "chat" spans until the
// turn's output guards have judged the answer: what a guard stops is
// never exported. The loop opens one for a turn with output guards; a
// span that finds one in its context hands it its last steps (set the
// output, end the span at the time the call ended) instead of taking
// them itself.
type Hold struct {
	mu      sync.Mutex
	done    bool
	pass    bool
	pending []func(pass bool)
}

type holdKey struct{}

// WithHold is ctx with a new Hold.
func WithHold(ctx context.Context) (context.Context, *Hold) {
	h := &Hold{}
	return context.WithValue(ctx, holdKey{}, h), h
}

// HoldOf is the Hold of ctx, or nil.
func HoldOf(ctx context.Context) *Hold {
	h, _ := ctx.Value(holdKey{}).(*Hold)
	return h
}

// Add runs f when h is released, with whether the output passed; at once
// when h already was.
func (h *Hold) Add(f func(pass bool)) {
	h.mu.Lock()
	if h.done {
		pass := h.pass
		h.mu.Unlock()
		f(pass)
		return
	}
	h.pending = append(h.pending, f)
	h.mu.Unlock()
}

// Release runs what was added, once; later calls do nothing.
func (h *Hold) Release(pass bool) {
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return
	}
	h.done, h.pass = true, pass
	fs := h.pending
	h.pending = nil
	h.mu.Unlock()
	for _, f := range fs {
		f(pass)
	}
}
