package web

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Close cancels every running turn, waits for them to end, and makes later
// turns fail with 503. The store stays open: it is the caller's.
func (h *Handler) Close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.stop()
	h.wg.Wait()
	return nil
}

// Shutdown makes later turns fail with 503 and waits for the running ones
// to end; when ctx ends first it cancels them, waits, and returns ctx's
// error.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		h.stop()
		<-done
		return ctx.Err()
	}
}

// Serve answers HTTP requests on ln until ctx ends, then cancels the
// running turns, closes the connections and returns nil.
func (h *Handler) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	_ = h.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-done
	return nil
}
