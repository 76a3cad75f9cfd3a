package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
)

// requestLog keeps what a fake model server was sent: each body decoded,
// the key it carried and the path it asked for.
type requestLog struct {
	mu     sync.Mutex
	bodies []map[string]any
	keys   []string
	paths  []string
}

// record reads r's body and keeps it with key and path.
func (l *requestLog) record(r *http.Request, key, path string) {
	b, _ := io.ReadAll(r.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bodies = append(l.bodies, m)
	l.keys = append(l.keys, key)
	l.paths = append(l.paths, path)
}
