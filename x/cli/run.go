package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/fallback"
	"github.com/lodeworks/lode/x/provider/openai"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

const noEndpoint = "no model endpoint configured: set --base-url and --model (or model: in lode.yaml) for any OpenAI-compatible server, or OPENAI_API_KEY for OpenAI — or try `lode demo`, which needs neither"

// modelProvider is a provider that says which server it talks to, for
// errors.
type modelProvider interface {
	provider.Provider
	BaseURL() string
}

// newProvider builds the provider a configuration names.
func newProvider(cfg *Config, e env, tracer trace.Tracer) (modelProvider, error) {
	warnKey(e, cfg.Model)
	switch cfg.Model.Provider {
	case providerAnthropic:
		return newAnthropic(cfg, e, tracer)
	case providerOpenAIResponses:
		return newResponses(cfg, e, tracer)
	case providerGemini:
		return newGemini(cfg, e, tracer)
	}
	return newOpenAI(cfg, e, tracer)
}

// newOpenAI builds the provider of an OpenAI-compatible server.
func newOpenAI(cfg *Config, e env, tracer trace.Tracer) (*openai.Provider, error) {
	httpc, key := cassetteClient(e, e.getenv(cfg.Model.APIKeyEnv))
	if cfg.Model.BaseURL == "" && key == "" {
		return nil, errors.New(noEndpoint)
	}
	if cfg.Model.Name == "" {
		return nil, errors.New("no model named: set --model, LODE_MODEL or model.name in lode.yaml")
	}
	// The key comes from api_key_env only: the provider's own fallback to
	// OPENAI_API_KEY would send an OpenAI key to a server configured with
	// a key of its own.
	getenv := func(k string) string {
		if k == openai.EnvAPIKey {
			return key
		}
		return e.getenv(k)
	}
	opts := []openai.Option{openai.WithModel(cfg.Model.Name), openai.WithEnv(getenv), openai.WithIdleTimeout(time.Duration(cfg.Model.IdleTimeout))}
	if tracer != nil {
		opts = append(opts, openai.WithTracer(tracer))
	}
	if cfg.Model.BaseURL != "" {
		opts = append(opts, openai.WithBaseURL(cfg.Model.BaseURL))
	}
	if cfg.Model.Stream != nil {
		opts = append(opts, openai.WithStreaming(*cfg.Model.Stream))
	}
	if key != "" {
		opts = append(opts, openai.WithAPIKey(key))
	}
	if httpc != nil {
		opts = append(opts, openai.WithHTTPClient(httpc))
	}
	return openai.New(opts...)
}

// newAnthropic builds the provider of the Messages API.
func newAnthropic(cfg *Config, e env, tracer trace.Tracer) (*anthropic.Provider, error) {
	httpc, key := cassetteClient(e, e.getenv(cfg.Model.APIKeyEnv))
	if cfg.Model.BaseURL == "" && key == "" {
		return nil, fmt.Errorf("no Anthropic API key: set %s (model.api_key_env in lode.yaml names the variable), or model.base_url for a server that needs none", cfg.Model.APIKeyEnv)
	}
	if cfg.Model.Name == "" {
		return nil, errors.New("no model named: set --model, LODE_MODEL or model.name in lode.yaml")
	}
	// As for openai: the key and URL come from lode's configuration only,
	// never from the provider's own fallback to its variables.
	getenv := func(k string) string {
		switch k {
		case anthropic.EnvAPIKey:
			return key
		case anthropic.EnvBaseURL:
			return cfg.Model.BaseURL
		}
		return e.getenv(k)
	}
	opts := []anthropic.Option{
		anthropic.WithModel(cfg.Model.Name), anthropic.WithAPIKey(key), anthropic.WithBaseURL(cfg.Model.BaseURL),
		anthropic.WithEnv(getenv), anthropic.WithIdleTimeout(time.Duration(cfg.Model.IdleTimeout)),
	}
	if tracer != nil {
		opts = append(opts, anthropic.WithTracer(tracer))
	}
	if cfg.Model.Stream != nil {
		opts = append(opts, anthropic.WithStreaming(*cfg.Model.Stream))
	}
	if httpc != nil {
		opts = append(opts, anthropic.WithHTTPClient(httpc))
	}
	if e.cassette != nil {
		// A replay judges a recorded container's expiry by the
		// recording's time, and so sends the requests it recorded.
		opts = append(opts, anthropic.WithClock(e.cassette.Clock()))
	}
	return anthropic.New(opts...)
}

// agent is a configured loop with its tools and model.
type agent struct {
	cfg      *Config
	step     *loop.Step
	prov     provider.Provider
	baseURL  string
	tools    *toolbox
	printer  *printer
	shutdown func(context.Context) error
	// roles, with a policy, are what every thread of the agent holds.
	roles *string
	// store is the spec of the agent's threads' store ("" in memory).
	store string
	// spend counts usd_per_day spending in that store (nil without).
	spend *spendCounter
	// handler, loopOpts (without it) and invoke are what step was built
	// from, for a Temporal worker to take turns and calls apart.
	handler  loop.Handler
	loopOpts []loop.Option
	invoke   []provider.InvokeOption
	// answer is memory extraction's handler (nil without it), which a
	// Temporal worker runs after a run's last answer.
	answer []loop.Handler
}

func newAgent(ctx context.Context, e env, o *options) (_ *agent, err error) {
	cfg, err := o.load(e)
	if err != nil {
		return nil, err
	}
	tel, shutdown, err := setupTelemetry(ctx, e, o.trace)
	if err != nil {
		return nil, err
	}
	tracer := tel.tracer
	defer func() {
		if err != nil {
			_ = shutdown(ctx)
		}
	}()
	prov, err := newModel(cfg, e, tracer)
	if err != nil {
		return nil, err
	}
	if e.cassette != nil {
		useCassette(e, cfg)
	}
	notes, err := prepareMCP(ctx, e, cfg)
	if err != nil {
		return nil, err
	}
	tb, err := mountTools(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pr := &printer{out: e.stdout, info: e.stderr, perTurn: o.trace}
	d, err := openDoor(e, cfg, tb, doorSpec{kind: doorLoop, roles: o.role, prov: prov, store: o.store})
	if err != nil {
		_ = tb.Close()
		return nil, err
	}
	handlerOpts := d.handler
	loopOpts := []loop.Option{loop.WithMaxTurns(cfg.MaxTurns), loop.WithTimeLimit(time.Duration(cfg.Model.Timeout)),
		loop.WithLease(time.Duration(cfg.Lease)), loop.WithApprovalExpiry(time.Duration(cfg.ApprovalExpiry)),
		loop.WithRecoverBy(recoverBy)}
	loopOpts = append(loopOpts, d.loop...)
	telHandler, telLoop := tel.options()
	handlerOpts = append(handlerOpts, telHandler...)
	loopOpts = append(loopOpts, telLoop...)
	notes.to(pr)
	handler := xtool.NewHandler(tb.reg, handlerOpts...)
	invoke := d.invoke(cfg, tb)
	loopOpts = append(loopOpts, loop.WithObserver(pr))
	var sendTo provider.Provider = prov
	if d.prov != nil {
		sendTo = d.prov
	}
	stepOpts := append(slices.Clip(loopOpts), d.extract...)
	step := loop.New(append(stepOpts, loop.WithHandlers(handler), loop.WithInvokeOptions(invoke...))...)
	return &agent{cfg: cfg, step: step, prov: sendTo, baseURL: prov.BaseURL(), tools: tb, printer: pr, shutdown: shutdown, roles: d.roles, store: d.store, spend: d.spend,
		handler: handler, loopOpts: loopOpts, invoke: invoke, answer: d.answer}, nil
}

func (a *agent) close() {
	_ = a.spend.Close()
	_ = a.tools.Close()
	_ = a.shutdown(context.Background())
}

// ask runs the agent on thread with a new user message and waits for the
// printer to catch up.
func (a *agent) ask(ctx context.Context, thread ledger.State, prompt string) error {
	if a.roles != nil {
		if err := thread.SetMetadata(policy.RolesKey, *a.roles); err != nil {
			return err
		}
	}
	if err := thread.Append(ledger.RoleUser, artifact.Text{Content: prompt}); err != nil {
		return err
	}
	a.printer.partial() // an earlier turn's unfinished text is not this one's
	_, err := a.step.Run(ctx, thread, a.prov)
	_ = a.step.Flush(context.WithoutCancel(ctx))
	a.printer.endLine()
	a.printer.summary()
	noteStop(thread, err)
	return explain(err, a.cfg, a.baseURL)
}

// explain turns the errors a newcomer meets into one line saying what to do.
// baseURL is the endpoint the provider talks to, which the configuration
// leaves empty for OpenAI's own.
func explain(err error, cfg *Config, baseURL string) error {
	if err == nil {
		return nil
	}
	if miss := replayMiss(err); miss != nil {
		return miss
	}
	if c := explainCost(err, cfg); c != nil {
		return c
	}
	if e, ok := explainResponses(err, cfg, baseURL); ok {
		return e
	}
	if g := explainGemini(err, cfg, baseURL); g != nil {
		return g
	}
	var limit *loop.LimitError
	if errors.As(err, &limit) {
		switch limit.Limit {
		case loop.LimitTime:
			return fmt.Errorf("the run took longer than its time limit of %s (--timeout, or model.timeout in lode.yaml) and was stopped", time.Duration(cfg.Model.Timeout))
		case loop.LimitTurns:
			return fmt.Errorf("the run was stopped after %d model turns with the model still calling tools (--max-turns, or max_turns in lode.yaml)", limit.Max)
		}
	}
	var timeout *openai.TimeoutError
	if errors.As(err, &timeout) && timeout.Idle {
		return fmt.Errorf("the model endpoint %s sent nothing for %s (--idle-timeout, or model.idle_timeout in lode.yaml) and the run was stopped", baseURL, timeout.Limit)
	}
	var aTimeout *anthropic.TimeoutError
	if errors.As(err, &aTimeout) && aTimeout.Idle {
		return fmt.Errorf("the model endpoint %s sent nothing for %s (--idle-timeout, or model.idle_timeout in lode.yaml) and the run was stopped", baseURL, aTimeout.Limit)
	}
	var aErr *anthropic.APIError
	if errors.As(err, &aErr) && errors.Is(aErr, anthropic.ErrUnauthorized) {
		// The provider's hint names its Go options; say what to set here.
		msg := "anthropic: 401 Unauthorized"
		if aErr.Message != "" {
			msg += ": " + aErr.Message
		}
		return fmt.Errorf("%s — check the API key in $%s (model.api_key_env in lode.yaml names the variable)", msg, cfg.Model.APIKeyEnv)
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		if apiErr.StatusCode == http.StatusUnauthorized {
			// The provider's hint names its Go options; say what to set here.
			msg := "openai: 401 Unauthorized"
			if apiErr.Message != "" {
				msg += ": " + apiErr.Message
			}
			return fmt.Errorf("%s — check the API key in $%s (model.api_key_env in lode.yaml names the variable)", msg, cfg.Model.APIKeyEnv)
		}
		return apiErr
	}
	var respErr *openai.ResponseError
	if errors.As(err, &respErr) && errors.Is(err, openai.ErrIncomplete) && strings.Contains(respErr.Detail, "no stream events") {
		return fmt.Errorf("the model endpoint %s did not stream its answer: if it cannot, set stream: false under model: in lode.yaml", baseURL)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return fmt.Errorf("cannot reach the model endpoint %s: %v", baseURL, opErr.Err)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("cannot reach the model endpoint %s: %v", baseURL, dnsErr)
	}
	return err
}

func cmdRun(ctx context.Context, e env, args []string) (err error) {
	fs := flag.NewFlagSet("lode run", flag.ContinueOnError)
	var o options
	o.register(fs)
	o.registerTenant(fs)
	var cas cassetteFlags
	cas.register(fs)
	var threadID string
	registerThread(fs, &threadID)
	var tf temporalFlags
	tf.register(fs)
	describe(fs, `lode run [flags] "prompt"   (or lode run [flags] - to read the prompt from standard input)`, `A call that needs approval stops the run with exit code 3; with --store (or
store: in lode.yaml) the lode resume commands that decide it are printed, one
per choice, ready to paste. With a store, the run's thread is kept and its ID
printed; --thread ID adds the prompt to that thread and goes on with it, and
--thread ID without a prompt goes on with a run that stopped before the model
answered (its server failed, Ctrl-C).

`+identityNotes+"\n"+rememberNotes+"\n"+temporalNotes+exitCodes)
	words, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	prompt := strings.TrimSpace(strings.Join(words, " "))
	if len(words) == 1 && words[0] == "-" {
		if prompt, err = readPrompt(e.stdin); err != nil {
			return err
		}
	}
	if prompt == "" && threadID == "" {
		return usageError{`lode run needs a prompt: lode run "what is 2^64?" (or lode run - to read it from standard input)`}
	}
	if onTemporal, err := tf.check(e); err != nil || onTemporal {
		if err != nil {
			return err
		}
		if prompt == "" {
			return usageError{"lode run --temporal needs a prompt"}
		}
		if cas.record != "" || cas.replay != "" {
			return usageError{"--record and --replay run the model in this process; with --temporal it runs on the workers"}
		}
		return runOnTemporal(ctx, e, &o, &tf, threadID, prompt)
	}
	if e.cassette, err = cas.start(); err != nil {
		return err
	}
	if e.cassette != nil {
		defer func() { err = stopCassette(e.cassette, e, err) }()
	}
	var stored ledger.State
	if threadID != "" {
		var closeStored func()
		if stored, closeStored, err = openStored(ctx, e, &o, threadID); err != nil {
			return err
		}
		defer closeStored()
	}
	a, err := newAgent(ctx, e, &o)
	if err != nil {
		return err
	}
	defer a.close()
	ctx, stop := interruptible(ctx, e)
	defer stop()
	thread, closeStore, err := a.startThread(ctx, &o, stored)
	if err != nil {
		return err
	}
	defer closeStore()
	if waiting := loop.Pending(thread); len(waiting) > 0 {
		// A message between a call and its result is a turn order
		// servers reject: the calls are decided first.
		listPending(e.stderr, thread.ID(), waiting, o.resumeCmd(a.store))
		return pausedErr{fmt.Sprintf("thread %s waits for the decisions above before it takes another message", thread.ID())}
	}
	if prompt == "" {
		// Without a prompt, --thread goes on with a run that stopped
		// before the model answered (its server failed, Ctrl-C).
		if !answerDue(thread) {
			return usageError{fmt.Sprintf("thread %s ends with the model's answer, so there is nothing to go on with: give lode run a prompt", thread.ID())}
		}
		err = a.goOn(ctx, thread)
	} else {
		err = a.ask(ctx, thread, prompt)
	}
	var pe *loop.PendingError
	if errors.As(err, &pe) {
		return pausedError(e.stderr, pe, o.resumeCmd(a.store))
	}
	// A run that stopped before the model answered keeps its thread,
	// marked for lode recover (noteStop): say where, so that the person
	// goes on with it rather than finding it later in lode threads.
	if err == nil || answerDue(thread) || errors.Is(err, loop.ErrTripped) {
		threadNote(e.stderr, thread, a.store)
	}
	return err
}

// maxPrompt bounds a prompt read from standard input.
const maxPrompt = 1 << 20

// readPrompt reads the whole of standard input as the prompt.
func readPrompt(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPrompt+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("reading the prompt from standard input: %w", err)
	case len(b) > maxPrompt:
		return "", fmt.Errorf("the prompt on standard input is longer than %d bytes", maxPrompt)
	case !utf8.Valid(b):
		return "", errors.New("the prompt on standard input is not UTF-8 text")
	}
	p := strings.TrimSpace(string(b))
	if p == "" {
		return "", usageError{"lode run -: standard input held no prompt"}
	}
	return p, nil
}

// interruptible cancels ctx on Ctrl-C.
func interruptible(ctx context.Context, e env) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch, release := interrupts(e)
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { release(); cancel() }
}

func interrupts(e env) (<-chan os.Signal, func()) {
	if e.interrupts != nil {
		return e.interrupts, func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	return ch, func() { signal.Stop(ch) }
}

func cmdChat(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode chat", flag.ContinueOnError)
	var o options
	o.register(fs)
	o.registerTenant(fs)
	var threadID string
	registerThread(fs, &threadID)
	describe(fs, "lode chat [flags]", "Ctrl-C stops a turn; at the prompt it only says how to quit. Ctrl-D quits.\n--timeout and --idle-timeout bound each answer; one that runs out is reported and the chat goes on.\nA call that needs approval is asked about here (y, n, e to edit); an edit the\ntool's schema refuses is asked about again, and calls that wait are decided\nbefore the next message.\nWith a store (--store, store: in lode.yaml) the chat's thread is kept there and\nits ID printed; --thread ID goes on with a stored thread.\n\n"+identityNotes+"\n"+rememberNotes+"\n"+exitCodes)
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if err := noArgs("lode chat", rest); err != nil {
		return err
	}
	// Lines are read apart from the loop so that a signal or the end of
	// ctx is seen while the prompt waits; an MCP server's elicitation
	// reads them too, while a turn runs.
	var stored ledger.State
	if threadID != "" {
		var closeStored func()
		if stored, closeStored, err = openStored(ctx, e, &o, threadID); err != nil {
			return err
		}
		defer closeStored()
	}
	lines := make(chan string)
	e.elicit = terminalElicitor(e.stderr, lines)
	a, err := newAgent(ctx, e, &o)
	if err != nil {
		return err
	}
	defer a.close()

	// Ctrl-C is ours while the chat runs: it stops a turn, and at the
	// prompt it only says how to quit.
	sigs, release := interrupts(e)
	defer release()
	readErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		in := bufio.NewScanner(e.stdin)
		in.Buffer(make([]byte, 64<<10), 1<<20)
		for in.Scan() {
			select {
			case lines <- in.Text():
			case <-done:
				return
			}
		}
		readErr <- in.Err()
		close(lines)
	}()

	thread, closeStore, err := a.startThread(ctx, &o, stored)
	if err != nil {
		return err
	}
	defer closeStore()
	fmt.Fprintf(e.stderr, "lode chat with %s — Ctrl-C stops a turn, Ctrl-D quits\n", a.cfg.Model.Name)
	threadNote(e.stderr, thread, a.store)
	for {
		// Calls still waiting (a decision round was stopped) are decided
		// before another user message is taken: a message between a call
		// and its result is a turn order servers reject.
		waiting := loop.Pending(thread)
		var line string
		if len(waiting) == 0 {
			a.printer.prompting("you> ")
		prompt:
			for {
				select {
				case <-ctx.Done():
					a.printer.prompting("")
					fmt.Fprintln(e.stderr)
					return ctx.Err()
				case <-sigs:
					a.printer.prompting("")
					fmt.Fprint(e.stderr, "\n(Ctrl-D quits)\n")
					a.printer.prompting("you> ")
				case l, ok := <-lines:
					a.printer.prompting("")
					if !ok {
						fmt.Fprintln(e.stderr)
						return <-readErr
					}
					line = strings.TrimSpace(l)
					break prompt
				}
			}
			if line == "" {
				continue
			}
		} else {
			fmt.Fprintf(e.stderr, "(%s still %s for approval)\n", plural(len(waiting), "tool call"), agree(len(waiting), "waits", "wait"))
		}
		turnCtx, cancel := context.WithCancel(ctx)
		answered := make(chan error, 1)
		if waiting != nil {
			answered <- &loop.PendingError{Thread: thread.ID(), Calls: waiting}
		} else {
			go func() { answered <- a.ask(turnCtx, thread, line) }()
		}
		var decided []artifact.Decision
	turn:
		for {
			select {
			case err = <-answered:
				var pe *loop.PendingError
				var de *loop.DecisionError
				var ask []artifact.Pending
				switch {
				case errors.As(err, &pe):
					ask, decided = pe.Calls, nil
				case errors.As(err, &de) && decided != nil:
					// Nothing was recorded: keep the other decisions and
					// ask again about the one refused.
					ask = refusedCall(thread, de.ToolCallID)
					if ask == nil {
						break turn
					}
					fmt.Fprintf(e.stderr, "lode: %s; decide again\n", oneLine(de.Error()))
					decided = slices.DeleteFunc(decided, func(d artifact.Decision) bool { return d.ToolCallID == de.ToolCallID })
				default:
					break turn
				}
				// Ask here, then go on as Resume would anywhere.
				ds, aerr := askInTerminal(turnCtx, e.stderr, lines, ask)
				if errors.Is(aerr, io.EOF) {
					cancel()
					fmt.Fprintln(e.stderr)
					return <-readErr
				}
				if aerr != nil {
					err = aerr
					break turn
				}
				decided = append(decided, ds...)
				all := slices.Clone(decided)
				go func() { answered <- a.resume(turnCtx, thread, all) }()
			case <-sigs:
				cancel()
			}
		}
		cancel()
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.Canceled):
			// The thread keeps what was shown, as the page does, so
			// that the next message follows an answer.
			if kerr := loop.KeepStopped(thread, a.printer.partial()); kerr != nil {
				fmt.Fprintln(e.stderr, "lode: keeping the stopped answer: "+oneLine(kerr.Error()))
			}
			fmt.Fprintln(e.stderr, "(turn stopped)")
		case errors.Is(err, loop.ErrTripped):
			te, _ := errors.AsType[*loop.TripError](err)
			fmt.Fprintln(e.stderr, "lode: "+oneLine(tripMessage(te)))
		default:
			fmt.Fprintln(e.stderr, "lode: "+oneLine(err.Error()))
		}
	}
}

// refusedCall is the pending call of thread with id, alone; nil when it
// does not wait.
func refusedCall(thread ledger.State, id string) []artifact.Pending {
	for _, c := range loop.Pending(thread) {
		if c.ToolCallID == id {
			return []artifact.Pending{c}
		}
	}
	return nil
}

// printer shows a run as it happens: the answer streamed to out, each tool
// call and its result to info.
type printer struct {
	mu      sync.Mutex
	out     io.Writer
	info    io.Writer
	midLine bool
	// thinking and streamed hold for the answer being streamed: whether
	// "(thinking…)" was shown, and whether its text came in deltas.
	thinking, streamed bool
	// run is what the run so far has spent; perTurn (--trace) prints each
	// turn's usage as it completes.
	run     spent
	perTurn bool
	// held are notes (an MCP server's logs and progress) that came while
	// the answer's line was open: written then, they would cut the answer
	// on stdout with a newline it does not have, so they wait for the line
	// to end.
	held []string
	// answer is the text of the answer being written, for the turn that
	// is stopped before it lands (loop.KeepStopped).
	answer strings.Builder
	// prompt is the chat's prompt while it waits for a line at it: a note
	// written then goes on a line of its own and the prompt is shown again
	// below it, so the person types after a prompt.
	prompt string
}

// note writes line to info, now or once the answer's line has ended.
func (p *printer) note(line string) {
	switch {
	case p.midLine:
		p.held = append(p.held, line)
	case p.prompt != "":
		fmt.Fprintf(p.info, "\n%s\n%s", line, p.prompt)
	default:
		fmt.Fprintln(p.info, line)
	}
}

// partial is the text shown of an answer that has not landed, and
// forgets it.
func (p *printer) partial() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.answer.String()
	p.answer.Reset()
	return s
}

// flushHeld writes the notes held while the answer's line was open.
func (p *printer) flushHeld() {
	for _, l := range p.held {
		fmt.Fprintln(p.info, l)
	}
	p.held = nil
}

// prompting shows the chat's prompt and records that it waits at it; ""
// records that the line was read.
func (p *printer) prompting(prompt string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prompt = prompt
	if prompt != "" {
		fmt.Fprint(p.info, prompt)
	}
}

func (p *printer) Emit(_ context.Context, ev loop.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case mcp.Notification:
		p.note(notificationLine(ev))
	case fallback.AttemptEvent:
		if line, ok := attemptLine(ev); ok {
			p.breakLine()
			fmt.Fprintln(p.info, line)
		}
	case memory.ExtractEvent:
		p.breakLine()
		fmt.Fprintln(p.info, extractLine(ev))
	case loop.UsageEvent:
		p.run.count(ev.Usage)
		if p.perTurn {
			one := spent{turns: 1}
			one.count(ev.Usage)
			p.breakLine()
			fmt.Fprintln(p.info, one.line("("+ev.For)+")")
		}
	case loop.DeltaEvent:
		switch d := ev.Delta.(type) {
		case artifact.TextDelta:
			if d.Content != "" {
				p.streamed = true
				p.answer.WriteString(d.Content)
				p.write(d.Content)
			}
		case artifact.ReasoningDelta:
			// A model that thinks may be silent for a while; say so once
			// per answer, without printing the thoughts.
			if !p.thinking {
				p.thinking = true
				p.breakLine()
				fmt.Fprintln(p.info, "(thinking…)")
			}
		}
	case loop.TurnCompleteEvent:
		p.answer.Reset()
		answer := ev.Role == ledger.RoleAssistant
		for _, a := range ev.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				// A server that does not stream sends the text whole.
				if answer && !p.streamed && a.Content != "" {
					p.write(a.Content)
				}
			case artifact.ToolCall:
				p.breakLine()
				fmt.Fprintf(p.info, "→ %s %s\n", a.Name, clip(a.Arguments, 200))
			case artifact.ToolResult:
				p.breakLine()
				mark := "←"
				if a.IsError {
					mark = "✗"
				}
				fmt.Fprintf(p.info, "%s %s: %s\n", mark, a.Name, clip(a.Content, 300))
			}
		}
		if answer {
			p.thinking, p.streamed = false, false
			p.usage(ev.Artifacts)
		}
	}
}

// usage adds an answer's usage to the run's, printing it with --trace.
func (p *printer) usage(arts []artifact.Artifact) {
	for _, a := range arts {
		u, ok := a.(artifact.Usage)
		if !ok {
			continue
		}
		p.run.add(u)
		if p.perTurn {
			one := spent{}
			one.add(u)
			p.breakLine()
			fmt.Fprintln(p.info, one.line(fmt.Sprintf("(turn %d", p.run.turns))+")")
		}
	}
}

// summary prints what the run spent, once, and starts the next run's
// count.
func (p *printer) summary() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.run.line("(used"); l != "" {
		fmt.Fprintln(p.info, l+")")
	}
	p.run = spent{}
}

func (p *printer) write(s string) {
	fmt.Fprint(p.out, s)
	p.midLine = !strings.HasSuffix(s, "\n")
	if !p.midLine {
		p.flushHeld()
	}
}

func (p *printer) breakLine() {
	if p.midLine {
		fmt.Fprintln(p.out)
		p.midLine = false
	}
	p.flushHeld()
}

// endLine ends a run's output, however the run ended.
func (p *printer) endLine() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.breakLine()
	p.thinking, p.streamed = false, false
}

// clip shows s on one line, at most n bytes of it.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}
