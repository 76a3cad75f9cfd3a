package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/openai"
	xtool "github.com/lodeworks/lode/x/tool"
)

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
