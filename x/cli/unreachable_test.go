package cli

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// A run whose model cannot be reached keeps its thread, marked stopped,
// and says so with the line that goes on with it: pasted once the model
// is back, it answers the question asked.
func TestUnreachableModelSaysWhereItsThreadIs(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "threads")
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL + "/v1"
	down.Close() // nothing listens there now
	r := lode(t, dir, nil, "", "run", "--store", store, "--base-url", downURL, "--model", "m", "what is 2+2?")
	m := threadLine.FindStringSubmatch(r.stderr)
	if r.code != exitError || m == nil {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("4.")}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r = lode(t, dir, nil, "", "run", "--store", store, "--base-url", srv.URL+"/v1", "--model", "m", "--thread", m[1])
	if r.code != 0 || r.stdout != "4.\n" {
		t.Fatalf("going on: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := requestTexts(t, fake, 0); len(got) != 1 || got[0] != "what is 2+2?" {
		t.Fatalf("the model was asked %q", got)
	}
}
