package loop

import (
	"context"
	"sync"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// TurnInfo describes the turn a handler is called in.
type TurnInfo struct {
	// State is the thread the turn runs on.
	State ledger.State
	// Request is what the provider was sent, after every option: its Tools
	// are exactly the tools this turn offered the model.
	Request *provider.Request
	// Answer is the assistant turn being handled.
	Answer []artifact.Artifact

	live *liveTurn
}

// liveTurn is what Notify needs of a turn: its Step and whether its
// handlers are still running. It is also the context the turn's handlers
// (or its provider) run in, answering CurrentTurn and provider.Notify:
// one allocation for what would otherwise be three.
type liveTurn struct {
	context.Context
	info TurnInfo
	step *Step
	mu   sync.RWMutex
	over bool
}

func (s *Step) newLiveTurn(ctx context.Context, info TurnInfo) *liveTurn {
	lt := &liveTurn{Context: ctx, info: info, step: s}
	lt.info.live = lt
	return lt
}

// notifying answers provider.Notify's key with notifyProvider; it never
// changes.
var notifying = provider.WithNotify(context.Background(), notifyProvider)

func (lt *liveTurn) Value(key any) any {
	if _, ok := key.(turnKey); ok {
		return &lt.info
	}
	if v := notifying.Value(key); v != nil {
		return v
	}
	return lt.Context.Value(key)
}

// end stops Notify from posting for this turn; it waits for posts in
// progress, so none lands after the turn's later events.
func (lt *liveTurn) end() {
	lt.mu.Lock()
	lt.over = true
	lt.mu.Unlock()
}

// Notify posts ev to the observers of the turn running in ctx, in order
// with the turn's other events. It lets code called by a handler, such as
// a tool reporting progress, reach the observers without an Emitter: ev is
// for observers only, never appended to the ledger. A provider may call it
// too, with the context of its invocation, while its stream runs. It
// returns false, and posts nothing, when ctx is not a handler's or a
// provider's context, or that turn's handlers, or that stream, have ended.
func Notify(ctx context.Context, ev Event) bool {
	t, ok := ctx.Value(turnKey{}).(*TurnInfo)
	if !ok || t.live == nil || ev == nil {
		return false
	}
	lt := t.live
	lt.mu.RLock()
	defer lt.mu.RUnlock()
	if lt.over {
		return false
	}
	lt.step.notify(ctx, ev)
	return true
}

// notifyProvider is Notify for provider.Notify, which a provider below
// loop calls with the context of its invocation.
func notifyProvider(ctx context.Context, ev provider.Event) bool { return Notify(ctx, ev) }

type turnKey struct{}

// CurrentTurn returns the turn a handler is running in. Handlers use it to
// refuse calls to tools the turn did not offer. In a provider's context
// (when the Step has observers) it is the turn being streamed, with no
// Answer yet.
func CurrentTurn(ctx context.Context) (*TurnInfo, bool) {
	t, ok := ctx.Value(turnKey{}).(*TurnInfo)
	return t, ok
}

// WithTurn marks ctx as a handler's context in turn t, handling
// t.Answer[index], as a loop turn marks it (CurrentTurn, ArtifactIndex),
// for an engine that runs a turn's calls apart from the turn, such as
// x/temporal's activities, which rebuild t from the ledger. Notify posts
// nothing there: no observers run with it.
func WithTurn(ctx context.Context, t TurnInfo, index int) context.Context {
	t.live = nil
	ctx = context.WithValue(ctx, turnKey{}, &t)
	return context.WithValue(ctx, indexKey{}, index)
}

type indexKey struct{}

// ArtifactIndex returns the position in TurnInfo.Answer of the artifact a
// handler is handling, which tells apart two artifacts that are equal (a
// model that sends the same tool call twice).
func ArtifactIndex(ctx context.Context) (int, bool) {
	i, ok := ctx.Value(indexKey{}).(int)
	return i, ok
}
