package idle

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

var errSilent = errors.New("silent")

// An armed guard cancels with its cause once the server stays silent.
func TestGuardFires(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	g := NewGuard(time.Millisecond, cancel, errSilent)
	g.Arm()
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), errSilent) {
		t.Errorf("cause %v", context.Cause(ctx))
	}
}

// A disarmed guard, and a read that returns, leave the context alone.
func TestGuardDisarmed(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	g := NewGuard(time.Hour, cancel, errSilent)
	g.Arm()
	b, err := io.ReadAll(g.Body(io.NopCloser(strings.NewReader("data"))))
	g.Disarm()
	if string(b) != "data" || err != nil || ctx.Err() != nil {
		t.Errorf("read %q, %v; context %v", b, err, ctx.Err())
	}
}

func TestNilGuard(t *testing.T) {
	var g *Guard
	g.Arm()
	g.Disarm()
	rc := io.NopCloser(strings.NewReader(""))
	if g.Body(rc) != rc {
		t.Error("a nil guard wrapped the body")
	}
}

// closer reports each Close on a channel.
type closer struct {
	io.Reader
	closed chan struct{}
}

func (c *closer) Close() error { c.closed <- struct{}{}; return nil }

// CloseOnDone closes the body when the context ends; closing it first
// stops the watch, so the body is closed once.
func TestCloseOnDone(t *testing.T) {
	t.Run("context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		rc := &closer{Reader: strings.NewReader(""), closed: make(chan struct{}, 2)}
		CloseOnDone(ctx, rc)
		cancel()
		<-rc.closed
	})
	t.Run("closed first", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		rc := &closer{Reader: strings.NewReader(""), closed: make(chan struct{}, 2)}
		if err := CloseOnDone(ctx, rc).Close(); err != nil {
			t.Fatal(err)
		}
		cancel()
		<-rc.closed
		select {
		case <-rc.closed:
			t.Error("closed twice")
		default:
		}
	})
}
