package provider

import "context"

// Event is what a provider posts, while its stream runs, to whoever runs
// it: a loop turn's observers (loop.Event has the same method, so every
// Event is one). It is never stored.
type Event interface {
	EventName() string
}

type notifyKey struct{}

// WithNotify returns ctx in which Notify hands events to post. The loop
// gives an invocation such a context when its turn has observers; post
// reports whether the event was delivered.
func WithNotify(ctx context.Context, post func(context.Context, Event) bool) context.Context {
	return context.WithValue(ctx, notifyKey{}, post)
}

// Notify posts ev to whoever runs the invocation whose context is ctx (a
// fallback reporting its attempts). It returns false, and posts nothing,
// when no one listens in ctx, or the listener is gone.
func Notify(ctx context.Context, ev Event) bool {
	post, ok := ctx.Value(notifyKey{}).(func(context.Context, Event) bool)
	if !ok || post == nil || ev == nil {
		return false
	}
	return post(ctx, ev)
}

// Listening reports whether someone listens to Notify in ctx, so that a
// provider builds an event only when it can be posted.
func Listening(ctx context.Context) bool {
	post, ok := ctx.Value(notifyKey{}).(func(context.Context, Event) bool)
	return ok && post != nil
}
