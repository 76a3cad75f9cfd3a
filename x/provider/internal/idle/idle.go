// Package idle ends a model call whose server stays silent too long, and
// unblocks a body read when the call's context ends, for the model
// adapters.
package idle

import (
	"context"
	"io"
	"time"
)

// Guard cancels a call when the server stays silent for too long. It is
// armed only while a read waits on the server, so a consumer that is slow
// to take what was read does not count against the server. A nil *Guard
// does nothing.
type Guard struct {
	d time.Duration
	t *time.Timer
}

// NewGuard returns a disarmed guard that, once armed, calls cancel with
// cause after d of silence.
func NewGuard(d time.Duration, cancel context.CancelCauseFunc, cause error) *Guard {
	t := time.AfterFunc(time.Hour, func() { cancel(cause) })
	t.Stop()
	return &Guard{d: d, t: t}
}

// Arm starts the silence count.
func (g *Guard) Arm() {
	if g != nil {
		g.t.Reset(g.d)
	}
}

// Disarm stops it.
func (g *Guard) Disarm() {
	if g != nil {
		g.t.Stop()
	}
}

// Body wraps rc so that g is armed while a read waits; with a nil g it is
// rc itself.
func (g *Guard) Body(rc io.ReadCloser) io.ReadCloser {
	if g == nil {
		return rc
	}
	return &body{ReadCloser: rc, g: g}
}

type body struct {
	io.ReadCloser
	g *Guard
}

func (b *body) Read(p []byte) (int, error) {
	b.g.Arm()
	n, err := b.ReadCloser.Read(p)
	b.g.Disarm()
	return n, err
}

// CloseOnDone closes rc when ctx ends, which unblocks a read at once even
// through an HTTP client that ignores the context.
func CloseOnDone(ctx context.Context, rc io.ReadCloser) io.ReadCloser {
	return &ctxBody{ReadCloser: rc, stop: context.AfterFunc(ctx, func() { rc.Close() })}
}

type ctxBody struct {
	io.ReadCloser
	stop func() bool
}

func (b *ctxBody) Close() error {
	b.stop()
	return b.ReadCloser.Close()
}
