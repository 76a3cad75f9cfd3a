package loop

import (
	"context"
	"encoding/json"
	"math"
	"runtime/debug"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// Admitter decides whether a request may be sent: a spend limit that must
// count all of it. A turn asks every Admitter after every invoke option has
// been resolved, so it sees the request exactly as the provider will get it
// (history as the history policy shortened it, system prompt, tools,
// MaxTokens), whatever order the options came in. An Admitter may lower
// req.MaxTokens (to what a limit can pay for); an error refuses the request:
// the provider is not called, nothing is appended, and the turn returns the
// error as the Admitter gave it (a *LimitError, x/policy's *SpendError). A
// panic fails the turn with an *OptionError.
//
// Give an Admitter with WithAdmitters, or as an invoke option: an
// InvokeOption that is also an Admitter (x/policy's SpendLimit) has its
// ApplyInvoke resolved in its place, and its Admit asked after all the
// options. Step.Request, which sends nothing, asks no Admitter.
type Admitter interface {
	// Admit returns what settles the admission once the answer is known,
	// or nil when there is nothing to settle.
	Admit(ctx context.Context, st ledger.State, req *provider.Request, est Estimate) (Settle, error)
}

// Settle ends an admission. The turn calls it once, when the provider's
// stream has ended: answer holds the whole artifacts received, their Usage
// priced when the Step has a Pricer, and err the failure (a
// *ProviderError, whose Started says whether anything arrived), if the
// stream failed. A request refused by a later
// Admitter is settled with no answer and the refusal.
type Settle func(ctx context.Context, answer []artifact.Artifact, err error)

// AdmitterFunc adapts a function to an Admitter.
type AdmitterFunc func(ctx context.Context, st ledger.State, req *provider.Request, est Estimate) (Settle, error)

// Admit calls f.
func (f AdmitterFunc) Admit(ctx context.Context, st ledger.State, req *provider.Request, est Estimate) (Settle, error) {
	return f(ctx, st, req, est)
}

// WithAdmitters adds Admitters, asked in this order after the Step's own
// cost limit (WithMaxCost) and before those given as invoke options to
// Turn or Run. Nil ones are skipped.
func WithAdmitters(a ...Admitter) Option {
	return func(s *Step) {
		for _, x := range a {
			if x != nil {
				s.admitters = append(s.admitters, x)
			}
		}
	}
}

// Estimator bounds from above the input tokens a server will bill for req.
type Estimator func(req *provider.Request) int64

// WithEstimator sets how a turn estimates its request for the Admitters and
// WithMaxCost; nil means EstimateInput.
func WithEstimator(e Estimator) Option { return func(s *Step) { s.estimator = e } }

// Estimate is what a turn knows of its request before sending it.
type Estimate struct {
	// InputTokens bounds from above the tokens the request's input will be
	// billed for (EstimateInput, unless WithEstimator says otherwise).
	InputTokens int64
}

// The estimate's ratios. Tokenisers give English prose about four bytes a
// token, code and JSON about three; two errs high for all of them (text in
// scripts of several bytes a character may come nearer one token a
// character, which two bytes a token still covers for most).
const (
	// EstimateBytesPerToken is the bytes of text the estimate counts as
	// one token.
	EstimateBytesPerToken = 2
	// estimateTurnBytes is what a message's framing (role, separators)
	// counts for.
	estimateTurnBytes = 8
	// estimateToolBytes is what one tool's framing counts for beyond its
	// name, description and schema: the widest wrapper an adapter sends
	// ({"type":"function","function":{"name":…,"description":…,
	// "strict":false,"parameters":…}}) and a default schema.
	estimateToolBytes = 128
	// EstimateToolsTokens is what a request that offers tools counts for
	// once: the instructions a server adds for tool use (Anthropic documents
	// up to 346 tokens).
	EstimateToolsTokens = 400
	// estimateImageBytes stands for a picture: 1,600 tokens, the most
	// Anthropic bills one image (OpenAI's high detail tiles cost less).
	estimateImageBytes = 1600 * EstimateBytesPerToken
	// estimateBaseTokens is the request's own framing.
	estimateBaseTokens = 16
)

// EstimateInput is the default Estimator: a bound from above on the input
// tokens of req as every adapter sends it. It counts the text of every
// turn (messages, reasoning with its signature and data, tool calls with
// their arguments, tool results with their parts, summaries), each tool
// offered — name, description and the bytes of its JSON schema as the
// adapters send it, plus framing — the response format's schema and the
// stop sequences, at EstimateBytesPerToken bytes a token, and
// EstimateToolsTokens once when tools are offered. A picture counts 1,600
// tokens.
//
// Its cost is linear in the turns and tools of req, never in their bytes:
// every size is a length, no schema is serialised again (1,000 tools cost
// a few microseconds; see BENCHMARKS.md).
func EstimateInput(req *provider.Request) int64 {
	if req == nil {
		return 0
	}
	n := 0
	for _, t := range req.Turns {
		n += estimateTurnBytes
		for _, a := range t.Artifacts {
			n += artifactBytes(a)
		}
	}
	tokens := int64(estimateBaseTokens)
	if len(req.Tools) > 0 {
		tokens += EstimateToolsTokens
		for i := range req.Tools {
			t := &req.Tools[i]
			n += estimateToolBytes + len(t.Name) + len(t.Description) + len(t.Schema)
		}
	}
	if f := req.ResponseFormat; f != nil {
		n += estimateToolBytes + len(f.Name) + len(f.Description) + len(f.Schema)
	}
	for _, s := range req.Stop {
		n += len(s) + 4
	}
	return tokens + int64((n+EstimateBytesPerToken-1)/EstimateBytesPerToken)
}

func artifactBytes(a artifact.Artifact) int {
	switch a := a.(type) {
	case artifact.Text:
		return len(a.Content)
	case artifact.Reasoning:
		return len(a.Content) + len(a.Signature) + len(a.Data)
	case artifact.ToolCall:
		return len(a.ID) + len(a.Name) + len(a.Arguments) + 16
	case artifact.ToolResult:
		n := len(a.ToolCallID) + len(a.Name) + len(a.Content) + 16
		for _, p := range a.Parts {
			n += artifactBytes(p)
		}
		return n
	case artifact.Summary:
		return len(a.Content)
	case artifact.Image:
		return estimateImageBytes
	case artifact.Audio:
		return len(a.Data)
	case artifact.Resource:
		return len(a.URI) + len(a.Text) + len(a.Blob)
	case artifact.ResourceLink:
		return len(a.URI) + len(a.Name) + len(a.Title) + len(a.Description)
	case artifact.Opaque:
		return len(a.Data)
	case artifact.Usage, artifact.Finish, artifact.Pending, artifact.Decision:
		return 0 // never sent
	case nil:
		return 0
	}
	// A kind this estimate does not know: its JSON errs high.
	b, _ := json.Marshal(a)
	return len(b)
}

// DefaultAnswerTokens is the answer a Quote assumes when the request sets
// no MaxTokens and the Pricer knows no maximum output for the models; the
// Admitter that keeps a limit then sends it as MaxTokens, so the server
// never answers past what was counted.
const DefaultAnswerTokens = 4096

// MinAnswerTokens is the smallest answer worth a call: a limit that
// cannot pay for the input and this many answer tokens refuses the call
// rather than cut its answer to nothing.
const MinAnswerTokens = 16

// Quote is what a request may cost at the priciest of the models that may
// answer it.
type Quote struct {
	// InputUSD is what the estimated input costs, cache writes at their
	// price where it is higher.
	InputUSD float64
	// AnswerTokenUSD is what one answer token costs, reasoning at its
	// price where it is higher.
	AnswerTokenUSD float64
	// AnswerTokens is the answer's cap: req.MaxTokens, else the largest
	// maximum output the Pricer knows of the models (a MaxOutput(model)
	// (int, bool) method, as x/catalog's Catalog has), else
	// DefaultAnswerTokens.
	AnswerTokens int64
	// Bounded says the server keeps AnswerTokens without being told:
	// it is the request's MaxTokens or the models' known maximum output,
	// not DefaultAnswerTokens.
	Bounded bool
}

// Quote prices e for req with p, at the priciest of models.
func (e Estimate) Quote(req *provider.Request, p Pricer, models ...string) Quote {
	q := Quote{AnswerTokens: int64(req.MaxTokens), Bounded: req.MaxTokens > 0}
	in := e.InputTokens
	for _, m := range models {
		plain, _ := p.Cost(m, artifact.Usage{InputTokens: in})
		written, _ := p.Cost(m, artifact.Usage{InputTokens: in, CacheWriteTokens: in})
		inUSD := max(plain, written)
		out, _ := p.Cost(m, artifact.Usage{InputTokens: in, OutputTokens: 1_000_000})
		reason, _ := p.Cost(m, artifact.Usage{InputTokens: in, OutputTokens: 1_000_000, ReasoningTokens: 1_000_000})
		q.InputUSD = max(q.InputUSD, inUSD)
		q.AnswerTokenUSD = max(q.AnswerTokenUSD, (max(out, reason)-plain)/1_000_000)
	}
	if q.AnswerTokens <= 0 {
		if mo, ok := p.(interface{ MaxOutput(string) (int, bool) }); ok {
			for _, m := range models {
				if v, ok := mo.MaxOutput(m); ok {
					q.AnswerTokens = max(q.AnswerTokens, int64(v))
				}
			}
		}
		q.Bounded = q.AnswerTokens > 0
		if q.AnswerTokens <= 0 {
			q.AnswerTokens = DefaultAnswerTokens
		}
	}
	return q
}

// Cost is what the request costs with an answer of answer tokens.
func (q Quote) Cost(answer int64) float64 {
	return q.InputUSD + float64(answer)*q.AnswerTokenUSD
}

// Fit returns the longest answer, up to q.AnswerTokens, that usd pays for
// with the input, and false when not even MinAnswerTokens fit.
func (q Quote) Fit(usd float64) (answer int64, ok bool) {
	if math.IsNaN(usd) || usd < q.Cost(min(MinAnswerTokens, q.AnswerTokens)) {
		return 0, false
	}
	answer = q.AnswerTokens
	if q.AnswerTokenUSD > 0 {
		if n := (usd - q.InputUSD) / q.AnswerTokenUSD; n < float64(answer) {
			answer = int64(n)
		}
	}
	return max(answer, min(MinAnswerTokens, q.AnswerTokens)), true
}

// Cap makes req keep to an answer of answer tokens, the one Fit chose:
// it lowers req.MaxTokens to answer, and sets it when it was unset unless
// the models' known maximum output already bounds the answer there, so
// that the server never answers past what was counted and a request a
// limit leaves room for goes as it was.
func (q Quote) Cap(req *provider.Request, answer int64) {
	answer = min(answer, math.MaxInt32)
	if req.MaxTokens > 0 && int64(req.MaxTokens) <= answer {
		return
	}
	if req.MaxTokens <= 0 && q.Bounded && answer >= q.AnswerTokens {
		return
	}
	req.MaxTokens = int(answer)
}

// admitted is what a turn's admissions must settle: the run's cost
// reservation (sp, cost) and the Admitters'.
type admitted struct {
	sp      *spend
	cost    float64
	settles []Settle
}

func (a *admitted) settle(ctx context.Context, answer []artifact.Artifact, err error) {
	if a.sp != nil {
		a.sp.release(a.cost)
		a.sp = nil
	}
	for _, s := range a.settles {
		s(ctx, answer, err)
	}
	a.settles = nil
}

// admit asks the Step's cost limit and every Admitter whether req may be
// sent. On a refusal it settles what was admitted before it.
func (s *Step) admit(ctx context.Context, st ledger.State, prov provider.Provider, req *provider.Request, extra []Admitter) (a admitted, err error) {
	sp := spendFrom(ctx)
	pricer, maxCost := s.limits(sp)
	costly := maxCost > 0 && sp != nil && pricer != nil
	if !costly && len(s.admitters) == 0 && len(extra) == 0 {
		return a, nil
	}
	var est Estimate
	if s.estimator != nil {
		est.InputTokens = s.estimator(req)
	} else {
		est.InputTokens = EstimateInput(req)
	}
	if costly {
		cost, err := sp.admit(req, est, pricer, modelsOf(prov), maxCost)
		if err != nil {
			return a, err
		}
		a.sp, a.cost = sp, cost
	}
	for i, ad := range append(s.admitters[:len(s.admitters):len(s.admitters)], extra...) {
		settle, err := s.callAdmitter(ctx, i, ad, st, req, est)
		if err != nil {
			a.settle(ctx, nil, err)
			return a, err
		}
		if settle != nil {
			a.settles = append(a.settles, settle)
		}
	}
	return a, nil
}

func (s *Step) callAdmitter(ctx context.Context, i int, ad Admitter, st ledger.State, req *provider.Request, est Estimate) (settle Settle, err error) {
	defer func() {
		if v := recover(); v != nil {
			idx := -1
			if o, ok := ad.(provider.InvokeOption); ok {
				idx = s.optionIndex(o)
			}
			oerr := &OptionError{Index: idx, Err: panicError(v), Panic: v, Stack: debug.Stack()}
			s.log().ErrorContext(ctx, "lode: admitter panicked", "admitter", i, "panic", v, "stack", string(oerr.Stack))
			settle, err = nil, oerr
		}
	}()
	return ad.Admit(ctx, st, req, est)
}

// optionIndex is where o is among the Step's invoke options, or -1.
func (s *Step) optionIndex(o provider.InvokeOption) (i int) {
	defer func() {
		if recover() != nil { // an uncomparable option
			i = -1
		}
	}()
	for i, x := range s.invokeOpts {
		if x == o {
			return i
		}
	}
	return -1
}

// admit reserves what req may cost under a run's cost limit, lowering
// MaxTokens to what is left, and returns the reservation; or refuses req
// with a *LimitError.
func (sp *spend) admit(req *provider.Request, est Estimate, pricer Pricer, models []string, maxCost float64) (float64, error) {
	q := est.Quote(req, pricer, models...)
	sp.mu.Lock()
	left := maxCost - sp.usd - sp.reserved
	answer, ok := q.Fit(left)
	if !ok {
		used := sp.usd
		sp.mu.Unlock()
		le := costLimit(used, maxCost)
		le.NextUSD = q.Cost(min(MinAnswerTokens, q.AnswerTokens))
		return 0, le
	}
	cost := q.Cost(answer)
	sp.reserved += cost
	sp.mu.Unlock()
	q.Cap(req, answer)
	return cost, nil
}

// release ends a reservation admit made.
func (sp *spend) release(cost float64) {
	sp.mu.Lock()
	sp.reserved -= cost
	sp.mu.Unlock()
}
