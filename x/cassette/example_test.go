package cassette_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/cassette"
	"github.com/lodeworks/lode/x/provider/openai"
)

// A test replays testdata/hello.yaml; with LODE_RECORD=1 it records the
// cassette again, here from localModel, usually from the real server (no
// WithTransport needed then). The API key is scrubbed from the file.
func ExampleForTest() {
	t := &exampleT{} // in a test: the test's *testing.T
	defer t.finish()

	client := cassette.ForTest(t, "testdata/hello.yaml", cassette.WithTransport(localModel{}))
	prov, err := openai.New(openai.WithModel("demo"), openai.WithBaseURL("http://model.test/v1"),
		openai.WithAPIKey("sk-never-written"), openai.WithHTTPClient(client))
	if err != nil {
		fmt.Println(err)
		return
	}
	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "Say hello."})
	if _, err := loop.New().Run(context.Background(), thread, prov); err != nil {
		fmt.Println(err)
		return
	}
	turns := thread.Turns()
	for _, a := range turns[len(turns)-1].Artifacts {
		if text, ok := a.(artifact.Text); ok {
			fmt.Println(text.Content)
		}
	}
	// Output: Hello from a cassette.
}

// localModel stands in for a model server while the example records.
type localModel struct{}

func (localModel) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range []string{
		chunk(`{"role":"assistant","content":"Hello "}`, "null"),
		chunk(`{"content":"from a cassette."}`, "null"),
		chunk(`{}`, `"stop"`),
		"[DONE]",
	} {
		fmt.Fprintf(w, "data: %s\n\n", e)
	}
	return w.Result(), nil
}

// exampleT is the part of *testing.T that ForTest uses, for an Example.
type exampleT struct{ cleanups []func() }

func (*exampleT) Helper()                           {}
func (*exampleT) Fatalf(format string, args ...any) { fmt.Fprintf(os.Stdout, format+"\n", args...) }
func (*exampleT) Errorf(format string, args ...any) { fmt.Fprintf(os.Stdout, format+"\n", args...) }
func (t *exampleT) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }

func (t *exampleT) finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
