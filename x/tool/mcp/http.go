package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/lodeworks/lode/ledger"
)

// ServeHTTP serves MCP's streamable HTTP transport (POST for requests, GET
// for the server's stream, DELETE to end a session) wherever the
// application mounts it, conventionally at /mcp:
//
//	mux.Handle("/mcp", srv)
//
// Before a request reaches MCP it must pass three checks: its Host (and
// Origin, when a browser sends one) must be loopback or allowed
// (WithAllowedHosts, WithAllowedOrigins), else 403; its body must fit
// WithMaxBodyBytes, else 413; and WithIdentify, when set, must identify
// its sender, else 401.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r.Host) {
		http.Error(w, fmt.Sprintf("Forbidden: Host %q is not allowed", r.Host), http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(origin) {
		http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not allowed", origin), http.StatusForbidden)
		return
	}
	if r.ContentLength > s.maxBody {
		http.Error(w, fmt.Sprintf("request body of %d bytes exceeds the limit of %d", r.ContentLength, s.maxBody), http.StatusRequestEntityTooLarge)
		return
	}
	if s.identify == nil {
		s.stream.ServeHTTP(w, r)
		return
	}
	st, err := s.identifyRequest(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "Unauthorized: "+err.Error(), http.StatusUnauthorized)
		return
	}
	if st == nil {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "Unauthorized: the request was not identified", http.StatusUnauthorized)
		return
	}
	key := strconv.FormatUint(s.nonces.Add(1), 36)
	s.idents.Store(key, st)
	defer s.idents.Delete(key)
	r2 := *r
	r2.Header = r.Header.Clone()
	r2.Header.Set(identityHeader, key)
	s.stream.ServeHTTP(w, &r2)
}

func (s *Server) identifyRequest(r *http.Request) (st ledger.State, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Default().ErrorContext(r.Context(), "lode: mcp identify hook panicked", "panic", p, "stack", string(debug.Stack()))
			st, err = nil, errors.New("the server could not identify the request")
		}
	}()
	return s.identify(r)
}

func (s *Server) hostAllowed(host string) bool {
	if s.anyHost {
		return true
	}
	if host == "" {
		return false
	}
	name := hostname(host)
	return isLoopback(name) || s.hosts[strings.ToLower(host)] || s.hosts[strings.ToLower(name)]
}

func (s *Server) originAllowed(origin string) bool {
	if s.anyOrigin {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if isLoopback(hostname(u.Host)) {
		return true
	}
	return s.origins[strings.ToLower(strings.TrimSuffix(origin, "/"))]
}

// hostname strips the port and IPv6 brackets from a Host value.
func hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

func isLoopback(name string) bool {
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// Serve serves MCP at /mcp on ln until ctx is done, then ends the HTTP
// sessions, shuts the server down and returns nil. It returns earlier
// only if serving fails.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", s)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("mcp: serve: %w", err)
	case <-ctx.Done():
	}
	// Open GET streams would hold Shutdown; end the sessions first.
	for ss := range s.sdk.Sessions() {
		if ss.ID() != "" {
			_ = ss.Close()
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	<-errc
	return nil
}

// ListenAndServe listens on addr ("127.0.0.1:8080") and serves MCP at
// /mcp until ctx is done; see Serve.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}
