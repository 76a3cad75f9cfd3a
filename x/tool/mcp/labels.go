package mcp

import (
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/ledger"
)

// sessionLabels keeps the flow labels (ledger.Label) a session's calls
// brought in when its caller is identified anew on every HTTP request
// (WithIdentify), whose state lives for one request only: without it, a
// session that fetched a page would send mail on its next request as if
// it had read nothing. The state of WithState lives as long as the server
// and keeps its own labels.
type sessionLabels struct {
	mu sync.Mutex
	m  map[string]map[ledger.Label]string // session ID -> label -> tool
}

// restore adds to st the labels the request's session holds.
func (s *Server) restoreLabels(req sdk.Request, st ledger.State) {
	id := sessionID(req)
	if id == "" || st == s.state {
		return
	}
	s.labels.mu.Lock()
	held := s.labels.m[id]
	s.labels.mu.Unlock()
	for l, from := range held {
		// A state that cannot take the label only loses what it would
		// have narrowed for this request; the session keeps it.
		_ = ledger.AddLabel(st, l, from)
	}
}

// keepLabels records st's labels as its session's, once its call ran.
func (s *Server) keepLabels(req sdk.Request, st ledger.State) {
	id := sessionID(req)
	if id == "" || st == s.state {
		return
	}
	labels := ledger.Labels(st)
	if len(labels) == 0 {
		return
	}
	s.labels.mu.Lock()
	defer s.labels.mu.Unlock()
	if s.labels.m == nil {
		s.labels.m = make(map[string]map[ledger.Label]string)
	}
	held, ok := s.labels.m[id]
	if !ok {
		s.pruneLabels()
		held = make(map[ledger.Label]string, len(labels))
		s.labels.m[id] = held
	}
	for _, l := range labels {
		if _, ok := held[l]; !ok {
			held[l], _ = ledger.HasLabel(st, l)
		}
	}
}

// pruneLabels forgets the labels of sessions that ended, as a new one
// is kept, so that what is kept is bounded by the live sessions; the
// caller holds s.labels.mu.
func (s *Server) pruneLabels() {
	live := make(map[string]bool, len(s.labels.m))
	for ss := range s.sdk.Sessions() {
		live[ss.ID()] = true
	}
	for id := range s.labels.m {
		if !live[id] {
			delete(s.labels.m, id)
		}
	}
}

func sessionID(req sdk.Request) string {
	if req == nil {
		return ""
	}
	ss, ok := req.GetSession().(*sdk.ServerSession)
	if !ok || ss == nil {
		return ""
	}
	return ss.ID()
}
