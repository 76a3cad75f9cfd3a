package output

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

// Mode says how the answer's schema reaches the model.
type Mode string

// Modes.
const (
	// ModeAuto (also the zero value) uses ModeResponseFormat when the
	// provider implements provider.ResponseFormatSupporter and supports
	// JSON schemas (and, if it is a FormatChecker, takes the answer's
	// schema), and ModeTool otherwise.
	ModeAuto Mode = "auto"
	// ModeResponseFormat sends the schema as the request's response
	// format; the answer is the text of the model's last turn.
	ModeResponseFormat Mode = "response_format"
	// ModeTool offers a final-answer tool whose arguments are the answer,
	// and requires a tool call on every turn; it works wherever tools do.
	ModeTool Mode = "tool"
)

// Defaults.
const (
	// DefaultMaxAttempts is how many answers a run takes before it gives
	// up with an *InvalidError, unless WithMaxAttempts says otherwise.
	DefaultMaxAttempts = 3
	// DefaultToolName is the final-answer tool's name in ModeTool.
	DefaultToolName = "final_answer"
)

// Option configures an Answer.
type Option func(*config)

type config struct {
	mode        Mode
	maxAttempts int
	name        string
	toolName    string
	description string
	invokeOpts  []provider.InvokeOption
}

// WithMode chooses how the schema reaches the model; "" means ModeAuto.
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithMaxAttempts bounds how many answers a run takes, the first included;
// n < 1 means DefaultMaxAttempts.
func WithMaxAttempts(n int) Option { return func(c *config) { c.maxAttempts = n } }

// WithName names the schema in the response format; "" means the answer
// type's name.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithToolName names the final-answer tool; "" means DefaultToolName.
func WithToolName(name string) Option { return func(c *config) { c.toolName = name } }

// WithDescription tells the model what the answer is for, in the response
// format or in the final-answer tool's description.
func WithDescription(d string) Option { return func(c *config) { c.description = d } }

// WithInvokeOptions adds invoke options to the runs of the package-level
// Run, after the Step's own.
func WithInvokeOptions(o ...provider.InvokeOption) Option {
	return func(c *config) { c.invokeOpts = append(c.invokeOpts, o...) }
}

// Answer asks a model for a final answer of type T and decodes it. It
// holds configuration only and is safe for concurrent use.
type Answer[T any] struct {
	cfg     config
	schema  json.RawMessage
	binding *tool.Binding
	final   tool.Tool
}

// New returns an Answer for T, which must be a struct (or a pointer to
// one): its schema is reflected as typed tools' arguments are (see
// tool.SchemaFor). New reports every bad option at once, each matching
// ErrOption.
func New[T any](opts ...Option) (*Answer[T], error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	var bad []error
	switch c.mode {
	case "":
		c.mode = ModeAuto
	case ModeAuto, ModeResponseFormat, ModeTool:
	default:
		bad = append(bad, fmt.Errorf("%w: WithMode(%q): use ModeAuto, ModeResponseFormat or ModeTool", ErrOption, string(c.mode)))
	}
	if c.maxAttempts < 1 {
		c.maxAttempts = DefaultMaxAttempts
	}
	if c.toolName == "" {
		c.toolName = DefaultToolName
	}
	if err := tool.ValidateName(c.toolName); err != nil {
		bad = append(bad, fmt.Errorf("%w: WithToolName: %w", ErrOption, err))
	}
	if c.name == "" {
		c.name = typeName[T]()
	}
	if err := tool.ValidateName(c.name); err != nil {
		bad = append(bad, fmt.Errorf("%w: WithName: %w", ErrOption, err))
	}
	a := &Answer[T]{cfg: c}
	// A private registry holding the final-answer tool compiles the schema
	// once and validates and decodes answers exactly as typed tools'
	// arguments are.
	reg := tool.NewRegistry()
	err := unexpressible(reflect.TypeFor[T](), map[reflect.Type]bool{})
	if err == nil {
		err = register[T](reg, c.toolName, toolDescription(c.description))
	}
	if err != nil && len(bad) == 0 {
		bad = append(bad, fmt.Errorf("%w: answer type %s: %w", ErrOption, reflect.TypeFor[T](), err))
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	a.binding, _ = reg.Lookup(c.toolName)
	a.final = a.binding.Tool
	a.schema = a.final.Schema
	return a, nil
}

// register registers the final-answer tool, and turns a panic of the
// schema reflector into an error.
func register[T any](reg tool.Registry, name, desc string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("its schema cannot be reflected: %v", r)
		}
	}()
	return tool.RegisterFunc(reg, name, desc, func(_ context.Context, in T) (T, error) { return in, nil })
}

// unexpressible names a part of t that JSON cannot carry.
func unexpressible(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return fmt.Errorf("%s has no JSON form", t)
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return unexpressible(t.Elem(), seen)
	case reflect.Map:
		if err := unexpressible(t.Key(), seen); err != nil {
			return err
		}
		return unexpressible(t.Elem(), seen)
	case reflect.Struct:
		for f := range t.Fields() {
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			if err := unexpressible(f.Type, seen); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
	}
	return nil
}

func toolDescription(d string) string {
	s := "Give your final answer by calling this tool: its arguments are the answer. Call it once, alone, after any other tools you need."
	if d != "" {
		s += " The answer: " + d
	}
	return s
}

// typeName names T for the response format: its Go name, made safe.
func typeName[T any]() string {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return "answer"
	}
	return tool.SafeName(t.Name())
}

// Schema returns the JSON Schema answers must match. The caller must not
// modify it.
func (a *Answer[T]) Schema() json.RawMessage { return a.schema }

// Decode validates raw, an answer as the model wrote it, against the
// schema and decodes it into T. A refused answer is an *InvalidError with
// Attempts 1.
func (a *Answer[T]) Decode(raw string) (T, error) {
	var zero T
	if err := a.check(raw); err != nil {
		return zero, &InvalidError{Attempts: 1, Last: raw, Err: err}
	}
	run, err := a.binding.Prepare(tool.NoSandbox(), raw)
	if err != nil {
		return zero, &InvalidError{Attempts: 1, Last: raw, Err: answerErr(err)}
	}
	v, err := run(context.Background())
	if err != nil {
		return zero, &InvalidError{Attempts: 1, Last: raw, Err: answerErr(err)}
	}
	return v.(T), nil
}

// check refuses what is not a JSON object, in words about an answer
// rather than about a tool's arguments.
func (a *Answer[T]) check(raw string) error {
	s := strings.TrimSpace(raw)
	if s == "" {
		return errors.New("the answer is empty")
	}
	if !json.Valid([]byte(s)) {
		var v any
		return fmt.Errorf("the answer is not valid JSON: %w", json.Unmarshal([]byte(s), &v))
	}
	if s[0] != '{' {
		return errors.New("the answer must be a JSON object")
	}
	return duplicateKey(s)
}

// duplicateKey refuses an object that has a key twice: encoding/json would
// keep the last, while the partials showed the first.
func duplicateKey(s string) error {
	var sc scanner
	sc.write(s)
	if sc.err != nil {
		return fmt.Errorf("the answer %s", strings.TrimPrefix(sc.err.Error(), "output: the answer "))
	}
	return nil
}

// answerErr turns a typed tool's refusal into one about the answer.
func answerErr(err error) error {
	var ae *tool.ArgumentsError
	if errors.As(err, &ae) {
		if cause := errors.Unwrap(ae.Err); cause != nil {
			return fmt.Errorf("the answer does not match the schema: %w", cause)
		}
		return ae.Err
	}
	return err
}

// mode resolves ModeAuto against prov.
func (a *Answer[T]) mode(prov provider.Provider) Mode {
	if a.cfg.mode != ModeAuto {
		return a.cfg.mode
	}
	s, ok := prov.(provider.ResponseFormatSupporter)
	if !ok || !s.SupportsResponseFormat(provider.ResponseFormatJSONSchema) {
		return ModeTool
	}
	if c, ok := prov.(FormatChecker); ok && c.CheckResponseFormat(a.format()) != nil {
		return ModeTool
	}
	return ModeResponseFormat
}

// FormatChecker is implemented by a provider that can tell, before it
// sends anything, whether it can send one response format: a server whose
// structured outputs take only part of JSON Schema (Claude's refuse a map,
// a recursive type). ModeAuto asks it, and offers the final-answer tool
// when the answer's schema is refused, rather than fail at the first turn.
type FormatChecker interface {
	CheckResponseFormat(f provider.ResponseFormat) error
}

// format is the response format of ModeResponseFormat.
func (a *Answer[T]) format() provider.ResponseFormat {
	return provider.ResponseFormat{
		Type: provider.ResponseFormatJSONSchema, Name: a.cfg.name,
		Description: a.cfg.description, Schema: a.schema,
	}
}

// Run runs step on st until the model gives a final answer, and returns it
// decoded. The model may call tools first (the step's handlers run them).
// An answer that breaks the schema is stored in st with, after it, a user
// turn quoting the validation error, and the model tries again, up to
// WithMaxAttempts answers in all; then Run returns an *InvalidError. Each
// try is one step.Run, with that Step's limits. A nil step means
// loop.New().
//
// The schema, the response format and the final-answer tool are added to
// each request and never stored: in ModeTool, the model's call to the
// final-answer tool is stored (and streamed to observers) as the text of
// its arguments, so that st reads the same in every mode and a reload
// builds the same requests.
func (a *Answer[T]) Run(ctx context.Context, step *loop.Step, st ledger.State, prov provider.Provider, opts ...provider.InvokeOption) (T, error) {
	var zero T
	if step == nil {
		step = loop.New()
	}
	if prov == nil || st == nil {
		_, err := step.Run(ctx, st, prov, opts...)
		return zero, err
	}
	ap := &answerProvider{inner: prov, mode: a.mode(prov), final: a.final}
	if ap.mode == ModeResponseFormat {
		f := a.format()
		ap.format = &f
	}
	for attempt := 1; ; attempt++ {
		ap.reset()
		if _, err := step.Run(ctx, st, ap, opts...); err != nil {
			return zero, err
		}
		raw := ap.answer()
		v, err := a.Decode(raw)
		if err == nil {
			return v, nil
		}
		var ie *InvalidError
		errors.As(err, &ie)
		if attempt >= a.cfg.maxAttempts {
			ie.Attempts = attempt
			return zero, ie
		}
		if err := st.Append(ledger.RoleUser, artifact.Text{Content: feedback(ie.Err, raw, ap.mode, a.final.Name)}); err != nil {
			return zero, fmt.Errorf("output: storing the feedback on an invalid answer: %w", err)
		}
	}
}

// maxReason and maxQuote bound the two parts of the feedback on an invalid
// answer, why it was refused and the answer itself, so that a huge answer
// (whose value a validator message may repeat) makes a short turn.
const (
	maxReason = 1000
	maxQuote  = 2000
)

// clip cuts s to n bytes on a character boundary, with a marker.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (cut; %d bytes in all)", strings.ToValidUTF8(s[:n], ""), len(s))
}

// feedback is what the model reads about an answer it must redo.
func feedback(err error, raw string, mode Mode, toolName string) string {
	var b strings.Builder
	b.WriteString("Your answer was not accepted: ")
	b.WriteString(clip(err.Error(), maxReason))
	b.WriteString(".\nYour answer was: ")
	if len(raw) > maxQuote {
		b.WriteString(strconv.Quote(strings.ToValidUTF8(raw[:maxQuote], "")))
		fmt.Fprintf(&b, " (cut; %d bytes in all)", len(raw))
	} else {
		b.WriteString(strconv.Quote(raw))
	}
	if mode == ModeTool {
		fmt.Fprintf(&b, "\nAnswer again by calling %s with arguments that match its schema.", toolName)
	} else {
		b.WriteString("\nAnswer again with JSON that matches the schema, and nothing else.")
	}
	return b.String()
}

// Run is New followed by Answer.Run with the options' invoke options.
func Run[T any](ctx context.Context, step *loop.Step, st ledger.State, prov provider.Provider, opts ...Option) (T, error) {
	a, err := New[T](opts...)
	if err != nil {
		var zero T
		return zero, err
	}
	return a.Run(ctx, step, st, prov, a.cfg.invokeOpts...)
}
