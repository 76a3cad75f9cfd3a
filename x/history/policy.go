package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// Defaults for the options that take a number.
const (
	DefaultKeep        = 4
	DefaultResultBytes = 256
)

// ErrOption matches every error New returns for a bad option.
var ErrOption = errors.New("history: invalid option")

type config struct {
	budget      int
	reserve     int
	model       string
	windower    Windower
	keep        int
	resultBytes int
	unpinFirst  bool
	blocks      int
	summarizer  provider.Provider

	summaryTokens    int
	summaryRetries   int
	summarizerBudget int
	logger           *slog.Logger
}

// Option configures a Policy.
type Option func(*config)

// WithBudget sets how many tokens a request's history may use. Zero takes
// the model's context window less the reserve; a negative value is an
// error.
func WithBudget(tokens int) Option { return func(c *config) { c.budget = tokens } }

// WithModel names the model whose context window sets the budget when
// WithBudget does not.
func WithModel(name string) Option { return func(c *config) { c.model = name } }

// WithWindower asks w for the model's window before the built-in table.
// Pass the provider itself: if it implements Windower it is asked, if not
// the option does nothing. nil does nothing.
func WithWindower(w any) Option {
	return func(c *config) {
		if win, ok := w.(Windower); ok {
			c.windower = win
		}
	}
}

// WithReserve sets the tokens left for the answer when the budget comes
// from a window; zero means DefaultReserve, a negative value is an error.
func WithReserve(tokens int) Option { return func(c *config) { c.reserve = tokens } }

// WithKeep sets how many of the newest turns keep their tool results whole
// when older ones are shortened; zero means DefaultKeep, a negative value
// is an error.
func WithKeep(turns int) Option { return func(c *config) { c.keep = turns } }

// WithResultBytes sets how much of an old tool result stays when results
// are shortened; zero means DefaultResultBytes, a negative value is an
// error.
func WithResultBytes(n int) Option { return func(c *config) { c.resultBytes = n } }

// WithPinnedFirst keeps (true, the default) or lets go of the thread's
// first user message when older turns are dropped.
func WithPinnedFirst(on bool) Option { return func(c *config) { c.unpinFirst = !on } }

// WithBlocks drops history in blocks of k ledger turns, so that the
// request's prefix, which a provider's prompt cache keeps, changes about
// once every k turns instead of on every turn; 0 (the default) slides the
// window one turn at a time, a negative value is an error. See Policy.
func WithBlocks(k int) Option { return func(c *config) { c.blocks = k } }

// WithSummarizer turns on compaction: when the history does not fit, p is
// asked to summarise the oldest part, and the summary is stored in the
// ledger. nil leaves compaction off: old turns are only dropped from the
// request.
func WithSummarizer(p provider.Provider) Option { return func(c *config) { c.summarizer = p } }

// WithSummaryTokens sets the tokens a summary may take in a request; zero
// means a quarter of the budget, a negative value is an error. A longer
// answer is asked for again, shorter, then cut and marked.
func WithSummaryTokens(tokens int) Option { return func(c *config) { c.summaryTokens = tokens } }

// WithSummaryRetries sets how many times an over-long summary is asked
// for again before it is cut; zero means DefaultSummaryRetries, a negative
// value means none.
func WithSummaryRetries(n int) Option { return func(c *config) { c.summaryRetries = n } }

// WithSummarizerBudget sets the tokens one summarizer request may use,
// instruction and summary so far included; zero means the policy's budget
// (the summarizer is usually the same model), a negative value is an
// error. Old turns are sent in as many requests as this takes.
func WithSummarizerBudget(tokens int) Option {
	return func(c *config) { c.summarizerBudget = tokens }
}

// WithLogger sets where a failed compaction is reported; nil means
// slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// Policy fits a thread's history into a token budget, on the request only.
// It is a provider.InvokeOption; give it to the loop before options that
// add turns (WithSystemPrompt), so that it sees the history as the ledger
// holds it. It holds configuration only and is safe for concurrent use.
//
// With WithBlocks(k), once the history does not fit, the request is built
// from a block edge: the ledger's length rounded down to a multiple of k.
// The turns from the edge on (the current block) go whole; the turns before
// it are fitted, as the sliding window fits them, into the budget less room
// for a block to grow in, the estimate of the previous k turns (at most half
// the budget). Within a block the older part is the same on every request
// and new turns only add to its end, so the request's prefix changes when
// the ledger crosses the next edge. At an edge this drops more than the
// sliding window would (up to a block's worth of tokens), and never more
// than the budget allows: when the current block outgrows its room, the
// request falls back to the sliding window for the rest of the block, and
// its prefix changes on those turns too.
type Policy struct {
	cfg    config
	budget int
}

// New checks every option and returns a Policy, or every problem found,
// each wrapping ErrOption.
func New(opts ...Option) (*Policy, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrOption}, args...)...))
	}
	if c.budget < 0 {
		bad("budget %d is negative: give a number of tokens, or 0 for the model's window", c.budget)
	}
	if c.reserve < 0 {
		bad("reserve %d is negative: give a number of tokens, or 0 for %d", c.reserve, DefaultReserve)
	}
	if c.keep < 0 {
		bad("keep %d is negative: give a number of turns, or 0 for %d", c.keep, DefaultKeep)
	}
	if c.resultBytes < 0 {
		bad("result bytes %d is negative: give a number of bytes, or 0 for %d", c.resultBytes, DefaultResultBytes)
	}
	if c.summaryTokens < 0 {
		bad("summary tokens %d is negative: give a number of tokens, or 0 for a quarter of the budget", c.summaryTokens)
	}
	if c.blocks < 0 {
		bad("blocks %d is negative: give a number of turns, or 0 to slide the window turn by turn", c.blocks)
	}
	if c.summarizerBudget < 0 {
		bad("summarizer budget %d is negative: give a number of tokens, or 0 for the policy's budget", c.summarizerBudget)
	}
	if c.reserve == 0 {
		c.reserve = DefaultReserve
	}
	if c.keep == 0 {
		c.keep = DefaultKeep
	}
	if c.resultBytes == 0 {
		c.resultBytes = DefaultResultBytes
	}
	budget := c.budget
	if budget == 0 && len(errs) == 0 {
		w, ok := 0, false
		if c.windower != nil && c.model != "" {
			w, ok = c.windower.ContextWindow(c.model)
		}
		if !ok && c.model != "" {
			w, ok = ContextWindow(c.model)
		}
		switch {
		case !ok && c.model == "":
			bad("no budget: set WithBudget, or WithModel with a model whose context window is known")
		case !ok:
			bad("no budget: the context window of model %q is not known; set WithBudget", c.model)
		case w <= c.reserve:
			bad("model %q has a window of %d tokens, no more than the reserve of %d: lower WithReserve or set WithBudget", c.model, w, c.reserve)
		default:
			budget = w - c.reserve
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p := &Policy{cfg: c, budget: budget}
	if c.summarizer != nil {
		if n := summaryBytes(p.summaryTokens(budget)); n < minSummaryBytes {
			bad("a summary share of %d tokens leaves %d bytes for a summary, under %d: raise WithSummaryTokens or the budget", p.summaryTokens(budget), n, minSummaryBytes)
		} else if n := p.chunkBytes(n); n < minChunkBytes {
			bad("a summarizer budget of %d tokens leaves %d bytes of transcript per request, under %d: raise WithSummarizerBudget or lower WithSummaryTokens", p.summarizerBudget(), n, minChunkBytes)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// Budget returns the tokens a request's history may use.
func (p *Policy) Budget() int { return p.budget }

// Blocks returns the turns of a block (WithBlocks); 0 means the window
// slides turn by turn.
func (p *Policy) Blocks() int { return p.cfg.blocks }

// ApplyInvoke replaces req.Turns with the view that fits the budget, after
// compacting when a summarizer is set and turns would be dropped. The
// ledger gains only the summary turn.
func (p *Policy) ApplyInvoke(ctx context.Context, st ledger.State, req *provider.Request) error {
	src := req.Turns
	vs := &viewSource{policy: p, state: st, turns: src}
	req.SetExtension(viewKey{}, vs)
	view, _, err := p.fit(ctx, st, src, p.budget, false)
	if err != nil {
		return err
	}
	req.Turns = view
	vs.view = view
	return nil
}

// View returns the request view of turns within the policy's budget
// without compacting: what ApplyInvoke sends when no summarizer is set,
// or when the summaries already stored in turns suffice.
func (p *Policy) View(turns []ledger.Turn) []ledger.Turn {
	v, _ := p.view(turns, nil, p.budget)
	return v
}

// fit builds the view of src within budget, compacting first when a
// summarizer is set and the view would drop turns (or always, when force
// is set).
func (p *Policy) fit(ctx context.Context, st ledger.State, src []ledger.Turn, budget int, force bool) ([]ledger.Turn, bool, error) {
	ledgerTurns := src
	if st != nil {
		ledgerTurns = st.Turns()
	}
	idx := mapIndexes(src, ledgerTurns)
	v, dropped := p.viewMapped(src, idx, ledgerTurns, nil, budget)
	if p.cfg.summarizer == nil || st == nil || (!dropped && !force) {
		return v, dropped, nil
	}
	sum, err := p.compact(ctx, src, idx, ledgerTurns, budget)
	if err != nil {
		if ctx.Err() != nil {
			return nil, dropped, err
		}
		// A summarizer that fails leaves the thread usable: this request
		// goes out trimmed, and the next one that drops turns tries again.
		p.reportFailure(ctx, err)
		return v, dropped, nil
	}
	if sum == nil {
		return v, dropped, nil
	}
	if err := st.Append(ledger.RoleSystem, *sum); err != nil {
		return nil, dropped, fmt.Errorf("history: store the summary of turns %d to %d: %w", sum.First, sum.Last, err)
	}
	v, dropped = p.viewMapped(src, idx, ledgerTurns, sum, budget)
	return v, dropped, nil
}

// reportFailure says, once per failed compaction, that a request went out
// trimmed: a warning in the log and an event on the turn's span.
func (p *Policy) reportFailure(ctx context.Context, err error) {
	kind := "summarizer_error"
	if errors.Is(err, ErrEmptySummary) {
		kind = "empty_summary"
	}
	var ce *CompactionError
	first, last := -1, -1
	if errors.As(err, &ce) {
		first, last = ce.First, ce.Last
	}
	log := p.cfg.logger
	if log == nil {
		log = slog.Default()
	}
	log.WarnContext(ctx, "history: compaction failed; the request is trimmed without a new summary and a later turn tries again",
		"first", first, "last", last, "error.type", kind, "error", err)
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.AddEvent("history.compaction_failed", trace.WithAttributes(
			attribute.Int("history.first", first), attribute.Int("history.last", last),
			attribute.String("error.type", kind), attribute.String("error.message", err.Error())))
		span.SetAttributes(attribute.String("history.compaction", "failed"))
	}
}

func (p *Policy) view(turns []ledger.Turn, sum *artifact.Summary, budget int) ([]ledger.Turn, bool) {
	return p.viewMapped(turns, nil, turns, sum, budget)
}

// mapIndexes gives the ledger index of each turn of src, which is the
// ledger's history with, perhaps, turns added by the loop (repair results)
// or earlier options; an added turn gets the index of the ledger turn
// before it. Turns are matched by identity: options share the ledger's
// turns, they do not copy them. It returns nil, meaning each turn's own
// position, when src is the ledger's history (or the start of it), so that
// the common request allocates nothing sized by the thread.
func mapIndexes(src, led []ledger.Turn) []int {
	if len(src) <= len(led) && (len(src) == 0 || &src[0] == &led[0]) {
		return nil
	}
	idx := make([]int, len(src))
	j := 0
	for i, t := range src {
		if j < len(led) && sameTurn(t, led[j]) {
			idx[i] = j
			j++
			continue
		}
		idx[i] = j - 1
	}
	return idx
}

// ledgerIndex is the ledger index of src[i] given mapIndexes' answer.
func ledgerIndex(idx []int, i int) int {
	if idx == nil {
		return i
	}
	return idx[i]
}

func sameTurn(a, b ledger.Turn) bool {
	if a.Role != b.Role || len(a.Artifacts) != len(b.Artifacts) {
		return false
	}
	return len(a.Artifacts) == 0 || &a.Artifacts[0] == &b.Artifacts[0]
}

// latestSummary finds the newest stored summary whose range lies inside
// the ledger. It copies the one it finds only, so a thread without a
// summary is scanned without allocating.
func latestSummary(led []ledger.Turn) *artifact.Summary {
	for i := len(led) - 1; i >= 0; i-- {
		for _, a := range led[i].Artifacts {
			if s, ok := a.(artifact.Summary); ok && s.First >= 0 && s.First <= s.Last && s.Last < i {
				found := new(artifact.Summary)
				*found = s
				return found
			}
		}
	}
	return nil
}

func isSummaryTurn(t ledger.Turn) bool {
	for _, a := range t.Artifacts {
		if _, ok := a.(artifact.Summary); ok {
			return true
		}
	}
	return false
}

// pinnedEnd returns how many turns of src lead it and are always sent:
// the system turns, then the first user turn when it is pinned.
func (p *Policy) pinnedEnd(src []ledger.Turn) int {
	i := 0
	for i < len(src) && src[i].Role == ledger.RoleSystem && !isSummaryTurn(src[i]) {
		i++
	}
	if !p.cfg.unpinFirst && i < len(src) && src[i].Role == ledger.RoleUser {
		i++
	}
	return i
}

// viewMapped is the heart of the policy: pinned turns, the summary (given,
// or the newest stored), then the newest groups of turns that fit, with
// old tool results shortened before whole groups are dropped. A group is a
// turn and the tool turns after it, so a call never leaves its result. It
// reports whether whole turns were left out (beyond those a summary stands
// for), which is when a summarizer is called.
//
// A thread grows for days while its view stays within the budget, so the
// view is built from the newest turn backwards and stops where the budget
// does: its cost follows the turns it keeps, not the thread's length.
func (p *Policy) viewMapped(src []ledger.Turn, idx []int, led []ledger.Turn, sum *artifact.Summary, budget int) ([]ledger.Turn, bool) {
	if sum == nil {
		sum = latestSummary(led)
	}
	pin := p.pinnedEnd(src)
	nhead := pin
	used := Estimate(src[:pin])
	var sumTurn ledger.Turn
	if sum != nil {
		sumTurn = summaryTurn(*sum)
		nhead++
		used += estimateTurn(sumTurn)
	}
	// prev returns the position in src of the newest turn before i that a
	// view may hold (not pinned, not a summary, not summarised), or pin-1.
	prev := func(i int) int {
		for i--; i >= pin; i-- {
			if isSummaryTurn(src[i]) {
				continue
			}
			if sum != nil {
				if li := ledgerIndex(idx, i); li >= sum.First && li <= sum.Last {
					if idx == nil {
						// Positions are ledger indexes: skip the whole
						// summarised range at once.
						i = max(sum.First, pin)
					}
					continue
				}
			}
			return i
		}
		return i
	}
	build := func(n int) []ledger.Turn {
		if nhead+n == 0 {
			return nil
		}
		out := make([]ledger.Turn, nhead+n)
		copy(out, src[:pin])
		if sum != nil {
			out[pin] = sumTurn
		}
		return out
	}

	// Everything fits: use the server's count where it is exact, that is
	// when nothing before the turn that carries it was left out.
	total, n, fits := used, 0, true
	for i := prev(len(src)); i >= pin; i = prev(i) {
		total += estimateTurn(src[i])
		n++
		if total > budget {
			fits = false
			break
		}
	}
	if fits && sum == nil && n == len(src)-pin {
		for i := len(src) - 1; i >= pin; i-- {
			if r, ok := reported(src[i]); ok {
				total = max(total, r+Estimate(src[i+1:]))
				break
			}
		}
	}
	if fits && total <= budget {
		out := build(n)
		k := len(out) - 1
		for i := prev(len(src)); i >= pin; i = prev(i) {
			out[k] = src[i]
			k--
		}
		return out, false
	}

	if p.cfg.blocks > 0 {
		if out, dropped, ok := p.blockView(src, idx, len(led), pin, used, prev, build, budget); ok {
			return out, dropped
		}
	}

	// Keep the newest groups that fit, the newest one always, with the
	// tool results of all but the newest keep turns shortened.
	var kept []ledger.Turn // newest first
	seen, from, cost, first, dropped := 0, 0, 0, true, false
	for i := prev(len(src)); i >= pin; {
		next := prev(i)
		t := src[i]
		if seen >= p.cfg.keep {
			t = p.shorten(t)
		}
		seen++
		kept = append(kept, t)
		cost += estimateTurn(t)
		i = next
		if t.Role == ledger.RoleTool && next >= pin {
			continue
		}
		if !first && used+cost > budget {
			kept, dropped = kept[:from], true
			break
		}
		used += cost
		first, from, cost = false, len(kept), 0
	}
	out := build(len(kept))
	for k, t := range kept {
		out[len(out)-1-k] = t
	}
	return out, dropped
}

// blockView is the view of WithBlocks: the turns from the block edge on,
// whole, after the newest groups before the edge that fit in the budget
// less the block's room. Everything it depends on is fixed while the
// ledger stays within one block, so the requests of a block share their
// prefix. It reports false when the current block does not fit beside the
// pinned turns and summary, for the sliding window to take over.
func (p *Policy) blockView(src []ledger.Turn, idx []int, nled, pin, used int, prev func(int) int, build func(int) []ledger.Turn, budget int) ([]ledger.Turn, bool, bool) {
	k := p.cfg.blocks
	edge := nled / k * k
	var tail []ledger.Turn // newest first
	tailCost := 0
	i := prev(len(src))
	for ; i >= pin && ledgerIndex(idx, i) >= edge; i = prev(i) {
		tail = append(tail, src[i])
		tailCost += estimateTurn(src[i])
	}
	if used+tailCost > budget {
		return nil, false, false
	}
	// The room a block grows in is what the previous block took.
	room := 0
	for j := i; j >= pin && ledgerIndex(idx, j) >= edge-k; j = prev(j) {
		room += estimateTurn(src[j])
	}
	limit := budget - min(room, budget/2)

	var head []ledger.Turn // newest first
	seen, from, cost, headCost, dropped := 0, 0, 0, 0, false
	for i >= pin {
		next := prev(i)
		t := src[i]
		if seen >= p.cfg.keep {
			t = p.shorten(t)
		}
		seen++
		head = append(head, t)
		cost += estimateTurn(t)
		i = next
		if t.Role == ledger.RoleTool && next >= pin {
			continue
		}
		if used+headCost+cost > limit {
			head, dropped = head[:from], true
			break
		}
		headCost += cost
		from, cost = len(head), 0
	}
	if used+headCost+tailCost > budget {
		return nil, false, false
	}
	out := build(len(head) + len(tail))
	k = len(out) - 1
	for _, t := range tail {
		out[k] = t
		k--
	}
	for _, t := range head {
		out[k] = t
		k--
	}
	return out, dropped, true
}

// groupTurns splits turns into [from, to) ranges, each a turn and the tool
// turns that follow it.
func groupTurns(turns []ledger.Turn) [][2]int {
	var gs [][2]int
	for i, t := range turns {
		if t.Role == ledger.RoleTool && len(gs) > 0 {
			gs[len(gs)-1][1] = i + 1
			continue
		}
		gs = append(gs, [2]int{i, i + 1})
	}
	return gs
}

// shorten returns t with each tool result cut to the policy's result
// bytes, marked; t itself is shared with the ledger and not changed.
func (p *Policy) shorten(t ledger.Turn) ledger.Turn {
	var arts []artifact.Artifact
	for i, a := range t.Artifacts {
		r, ok := a.(artifact.ToolResult)
		if !ok || len(r.Content) <= p.cfg.resultBytes {
			continue
		}
		if arts == nil {
			arts = append([]artifact.Artifact(nil), t.Artifacts...)
		}
		cut := p.cfg.resultBytes
		for cut > 0 && cut < len(r.Content) && !utf8RuneStart(r.Content[cut]) {
			cut--
		}
		r.Content = fmt.Sprintf("%s\n[… %d more bytes of this old result left out to fit the context window; call the tool again if it matters …]", r.Content[:cut], len(r.Content)-cut)
		r.Full, r.Truncated, r.Parts = "", true, nil
		arts[i] = r
	}
	if arts == nil {
		return t
	}
	t.Artifacts = arts
	return t
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// SummaryPrefix opens the text that stands for summarised turns in a
// request.
const SummaryPrefix = "Summary of the earlier conversation, which was shortened to fit the context window:\n\n"

func summaryTurn(s artifact.Summary) ledger.Turn {
	return ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: SummaryPrefix + s.Content}}}
}

// transcript renders turns as plain text for the summarizer.
func (p *Policy) transcript(b *strings.Builder, turns []ledger.Turn) {
	for _, t := range turns {
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				fmt.Fprintf(b, "%s: %s\n", t.Role, a.Content)
			case artifact.ToolCall:
				fmt.Fprintf(b, "%s called %s(%s)\n", t.Role, a.Name, a.Arguments)
			case artifact.ToolResult:
				c := p.shorten(ledger.Turn{Artifacts: []artifact.Artifact{a}}).Artifacts[0].(artifact.ToolResult).Content
				fmt.Fprintf(b, "result of %s: %s\n", a.Name, c)
			}
		}
	}
}
