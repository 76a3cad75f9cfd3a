package toolsearch_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/cassette"
	"github.com/lodeworks/lode/x/provider/openai"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// recordingBase is the server the cassette names; recording sends its
// requests to a scripted fake that speaks OpenAI's wire format instead.
const recordingBase = "http://models.lode.test/v1"

// scriptedOpenAI answers chat completions from a script, in order.
type scriptedOpenAI struct {
	mu      sync.Mutex
	answers []string
}

func completion(message, finish string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":` + message +
		`,"finish_reason":"` + finish + `"}],"usage":{"prompt_tokens":50,"completion_tokens":10,"total_tokens":60}}`
}

func toolCall(id, name, args string) string {
	return completion(fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]}`,
		id, name, strconv.Quote(args)), "tool_calls")
}

func (s *scriptedOpenAI) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) == 0 {
		http.Error(w, `{"error":{"message":"no more answers"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, s.answers[0])
	s.answers = s.answers[1:]
}

// toFake sends every request to the fake.
type toFake struct{ fake *url.URL }

func (t toFake) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = t.fake.Scheme, t.fake.Host
	return http.DefaultTransport.RoundTrip(r)
}

// TestRecordedSession replays a recorded model session that uses the
// search (testdata/search.yaml; LODE_RECORD=1 records it again, from the
// scripted fake: no public recording of a session using lode's search
// exists). The replay makes the same requests — the second offers what
// the first search loaded — and the thread, reloaded from its store,
// offers the same tools to the next turn.
func TestRecordedSession(t *testing.T) {
	var opts []cassette.Option
	if on, _ := strconv.ParseBool(os.Getenv(cassette.EnvRecord)); on {
		fake := httptest.NewServer(&scriptedOpenAI{answers: []string{
			toolCall("call_1", toolsearch.DefaultName, `{"query":"email an invoice to a customer","limit":1}`),
			toolCall("call_2", invoiceTool, `{"id":"42"}`),
			completion(`{"role":"assistant","content":"Invoice 42 is on its way."}`, "stop"),
		}})
		defer fake.Close()
		u, _ := url.Parse(fake.URL)
		opts = append(opts, cassette.WithTransport(toFake{u}))
	}
	client := cassette.ForTest(t, filepath.Join("testdata", "search.yaml"), opts...)
	prov, err := openai.New(openai.WithAPIKey("test-key"), openai.WithModel("m"), openai.WithBaseURL(recordingBase),
		openai.WithHTTPClient(client), openai.WithStreaming(false), openai.WithEnv(func(string) string { return "" }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Create(ctx, ledger.WithID("recorded"))
	if err != nil {
		t.Fatal(err)
	}
	reg := mounted(t, 1000)
	s := newSearch(t, reg)
	var offers [][]string
	spy := loop.WithInvokeOptions(xtool.WithFilteredTools(reg, func(ctx context.Context, st ledger.State, tools []toolpkg.Tool) []toolpkg.Tool {
		out := s.Filter()(ctx, st, tools)
		offers = append(offers, names(out))
		return out
	}))
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), spy)
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "Send invoice 42 to its customer."})
	if _, err := step.Run(ctx, st, prov); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"clock", toolsearch.DefaultName}, {"clock", invoiceTool, toolsearch.DefaultName}, {"clock", invoiceTool, toolsearch.DefaultName}}
	if len(offers) != 3 || !slices.Equal(offers[0], want[0]) || !slices.Equal(offers[1], want[1]) {
		t.Fatalf("offers %v, want %v", offers, want)
	}
	turns := st.Turns()
	if got := turns[len(turns)-1].Artifacts[0]; got != (artifact.Text{Content: "Invoice 42 is on its way."}) {
		t.Fatalf("last answer %#v", got)
	}
	_ = store.Close()
	again, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	loaded, err := again.Load(ctx, "recorded")
	if err != nil {
		t.Fatal(err)
	}
	reg2 := mounted(t, 1000)
	if got := offer(t, reg2, newSearch(t, reg2), loaded); !slices.Contains(got, invoiceTool) {
		t.Fatalf("the reloaded thread offers %v", got)
	}
}
