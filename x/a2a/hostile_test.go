package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	lodea2a "github.com/lodeworks/lode/x/a2a"
)

// rawServer serves card (with %s standing for its own URL) at the
// well-known path, and rpc at /rpc.
func rawServer(t *testing.T, card string, rpc http.HandlerFunc) (string, *seen) {
	t.Helper()
	var s seen
	mux := http.NewServeMux()
	srv := httptest.NewServer(s.wrap(mux))
	t.Cleanup(srv.Close)
	mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(card, "%s") {
			fmt.Fprintf(w, card, srv.URL)
			return
		}
		fmt.Fprint(w, card)
	})
	if rpc != nil {
		mux.HandleFunc("/rpc", rpc)
	}
	return srv.URL, &s
}

// cardWith is a valid 1.0 card but for skills, given as JSON.
func cardWith(skills string) string {
	return `{"name":"Bad","description":"d","version":"1","capabilities":{},"defaultInputModes":[],"defaultOutputModes":[],` +
		`"supportedInterfaces":[{"url":"%s/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"skills":` + skills + `}`
}

func manySkills(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"s%d","name":"s","description":"d","tags":[]}`, i)
	}
	b.WriteString("]")
	return b.String()
}

func TestHostileCards(t *testing.T) {
	huge := cardWith(`[{"id":"a","name":"a","description":"` + strings.Repeat("x", lodea2a.MaxCard) + `","tags":[]}]`)
	for _, tc := range []struct {
		name, card, want string
	}{
		{"huge", huge, "agent-card.json is over 1048576 bytes"},
		{"not json", "<html>hello</html>", "agent-card.json is not JSON"},
		{"not an object", `["a"]`, "cannot unmarshal array"},
		{"skills not a list", cardWith(`"all of them"`), "cannot unmarshal string"},
		{"skill id a number", cardWith(`[{"id":7,"name":"a","description":"d","tags":[]}]`), "cannot unmarshal number"},
		{"too many skills", cardWith(manySkills(lodea2a.MaxSkills + 1)), `the agent "Bad" lists 65 skills; at most 64 are mounted`},
		{"no skills", cardWith(`[]`), `the agent "Bad" lists no skills, so there is nothing to call`},
		{"skill without id", cardWith(`[{"id":" ","name":"a","description":"d","tags":[]}]`), `skill 1 of the agent "Bad" has no id`},
		{"colliding skills", cardWith(`[{"id":"a.b","name":"a","description":"d","tags":[]},{"id":"a_b","name":"b","description":"d","tags":[]}]`), `the agent "Bad" has skills "a.b" and "a_b", which would both be the tool "a_b"`},
		{"no usable endpoint", `{"name":"Bad","skills":[{"id":"a","name":"a","description":"d","tags":[]}],"supportedInterfaces":[{"url":"ftp://x/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"},{"url":"%s/rpc","protocolBinding":"CARRIER-PIGEON","protocolVersion":"1.0"}]}`, "it lists no endpoint lode can call"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := rawServer(t, tc.card, nil)
			_, err := lodea2a.Mount(context.Background(), tool.NewRegistry(), url)
			if !errors.Is(err, lodea2a.ErrCard) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(srv.Close)
		_, err := lodea2a.NewRemote(context.Background(), srv.URL)
		if !errors.Is(err, lodea2a.ErrCard) || !strings.Contains(err.Error(), "answered 404 Not Found") {
			t.Fatalf("err %v", err)
		}
	})
}

func TestSkillNamesMadeSafe(t *testing.T) {
	long := strings.Repeat("k", 80)
	url, _ := rawServer(t, cardWith(`[{"id":"web search!","name":"a","description":"d","tags":[]},{"id":"`+long+`","name":"b","description":"d","tags":[]}]`), nil)
	reg := tool.NewRegistry()
	if _, err := lodea2a.Mount(context.Background(), reg, url); err != nil {
		t.Fatal(err)
	}
	for _, tl := range reg.Tools() {
		if err := tool.ValidateName(tl.Name); err != nil {
			t.Errorf("%q: %v", tl.Name, err)
		}
	}
	if _, ok := reg.Lookup("bad__web_search_"); !ok {
		t.Errorf("tools %v", reg.Tools())
	}
}

func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  string
		opts []lodea2a.RemoteOption
		want string
	}{
		{"scheme", "ftp://x", nil, `url "ftp://x": the scheme must be http or https`},
		{"no host", "http://", nil, `url "http://": no host`},
		{"password in url", "http://u:p@x", nil, "credentials go in WithBearerToken or WithHeader, not in the URL"},
		{"bad name", "http://x", []lodea2a.RemoteOption{lodea2a.WithName("a b")}, "WithName: tool name \"a b\" has ' '"},
		{"token with newline", "http://x", []lodea2a.RemoteOption{lodea2a.WithBearerToken("a\nb")}, "the token holds a line break"},
		{"bad header", "http://x", []lodea2a.RemoteOption{lodea2a.WithHeader("X Y", "v")}, `WithHeader("X Y"): not a valid header`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lodea2a.NewRemote(context.Background(), tc.url, tc.opts...)
			if !errors.Is(err, lodea2a.ErrOption) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), ":p@") {
				t.Fatalf("err %v", err)
			}
		})
	}
}

// rpcAnswer answers every JSON-RPC request with result, as JSON.
func rpcAnswer(result string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID any `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		id, _ := json.Marshal(req.ID)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
	}
}

// onlySend answers SendMessage with h and every other method (GetTask)
// with an HTTP error: an agent that leaves its task working and then
// stops answering.
func onlySend(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"SendMessage"`) {
			http.Error(w, "gone", http.StatusBadGateway)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		h(w, r)
	}
}

func TestHostileAnswers(t *testing.T) {
	okCard := cardWith(`[{"id":"ask","name":"ask","description":"d","tags":[]}]`)
	big := strings.Repeat("é", 100)
	for _, tc := range []struct {
		name   string
		rpc    http.HandlerFunc
		isErr  bool
		want   string
		goErr  string
		maxRes int
	}{
		{name: "long answer is cut", maxRes: 21, rpc: rpcAnswer(`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"` + big + `"}]}}`),
			want: strings.Repeat("é", 10) + "…\n[a2a: the answer was cut to 21 of its 200 bytes]"},
		{name: "data part", rpc: rpcAnswer(`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"data":{"n":1}},{"url":"http://f/x.png","mediaType":"image/png"}]}}`),
			want: `{"n":1}[file image/png http://f/x.png]`},
		{name: "failed task", isErr: true, rpc: rpcAnswer(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"disk full"}]}}}}`),
			want: "The agent bad failed: disk full"},
		{name: "rejected task", isErr: true, rpc: rpcAnswer(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_REJECTED"}}}`),
			want: "The agent bad rejected the task: (no reason given)"},
		{name: "auth required", isErr: true, rpc: rpcAnswer(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"log in at x"}]}}}}`),
			want: "The agent bad needs authentication that lode cannot give in a call: log in at x"},
		{name: "still working", isErr: true, rpc: onlySend(rpcAnswer(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`)),
			want: "The agent bad stopped answering before its task ended (it was working)."},
		{name: "completed without text", isErr: true, rpc: rpcAnswer(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`),
			want: "The agent bad finished without a text answer."},
		{name: "unknown state", isErr: true, rpc: onlySend(rpcAnswer(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_DANCING"}}}`)),
			want: "The agent bad stopped answering before its task ended (it was dancing)."},
		{name: "wrong types", rpc: rpcAnswer(`{"task":{"id":7,"status":"done"}}`), goErr: "a2a: bad: "},
		{name: "neither task nor message", rpc: rpcAnswer(`{"surprise":true}`), goErr: "a2a: bad: "},
		{name: "not json", rpc: func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>") }, goErr: "a2a: bad: "},
		{name: "json-rpc error", rpc: func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":"lode-1","error":{"code":-32603,"message":"boom"}}`)
		}, goErr: "boom"},
		{name: "http 500", rpc: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 500) }, goErr: "500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := rawServer(t, okCard, tc.rpc)
			opts := []lodea2a.RemoteOption{lodea2a.WithReadOnly()}
			if tc.maxRes > 0 {
				opts = append(opts, lodea2a.WithMaxResult(tc.maxRes))
			}
			_, r := mount(t, url, opts...)
			v, err := r.Call(context.Background(), "ask", map[string]any{"task": "x"})
			if tc.goErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.goErr) {
					t.Fatalf("err %v, result %+v", err, v)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := v.(tool.Result)
			if res.IsError != tc.isErr || res.Content != tc.want {
				t.Fatalf("result %v %q, want %v %q", res.IsError, res.Content, tc.isErr, tc.want)
			}
		})
	}
}

func TestCredentialsOnlyToTheCardsOrigin(t *testing.T) {
	// The card at A names B as its endpoint: B never sees the token.
	g := &goAgent{exec: answer("fine", "", nil)}
	other, seenB := goServer(t, g, false, nil)
	url, seenA := rawServer(t, `{"name":"A","skills":[{"id":"ask","name":"a","description":"d","tags":[]}],"capabilities":{},`+
		`"supportedInterfaces":[{"url":"`+other+`/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, nil)
	_, r := mount(t, url, lodea2a.WithReadOnly(), lodea2a.WithBearerToken("s3cret"), lodea2a.WithHeader("X-Tenant-Key", "k9"))
	v, err := r.Call(context.Background(), "ask", map[string]any{"task": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res := v.(tool.Result); res.IsError || res.Content != "fine" {
		t.Fatalf("result %+v", res)
	}
	if a := seenA.headers("Authorization"); len(a) != 1 || a[0] != "Bearer s3cret" {
		t.Errorf("card origin saw %q", a)
	}
	if k := seenA.headers("X-Tenant-Key"); len(k) != 1 || k[0] != "k9" {
		t.Errorf("card origin saw %q", k)
	}
	for _, h := range []string{"Authorization", "X-Tenant-Key"} {
		for _, v := range seenB.headers(h) {
			if v != "" {
				t.Errorf("the other origin got %s: %q", h, v)
			}
		}
	}
	if len(seenB.headers("Authorization")) == 0 {
		t.Error("the other origin got no request")
	}
}

func TestCredentialsNotFollowingARedirect(t *testing.T) {
	// A's card redirects to B's: B gets neither the token nor the header.
	url, seenB := rawServer(t, cardWith(`[{"id":"ask","name":"a","description":"d","tags":[]}]`), nil)
	var seenA seen
	a := httptest.NewServer(seenA.wrap(http.RedirectHandler(url+"/.well-known/agent-card.json", http.StatusFound)))
	t.Cleanup(a.Close)
	r, err := lodea2a.NewRemote(context.Background(), a.URL, lodea2a.WithBearerToken("s3cret"), lodea2a.WithHeader("X-Key", "k"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := seenA.headers("Authorization"); len(got) != 1 || got[0] != "Bearer s3cret" {
		t.Errorf("A saw %q", got)
	}
	if got := seenB.headers("Authorization"); len(got) != 1 || got[0] != "" {
		t.Errorf("B saw authorization %q", got)
	}
	if got := seenB.headers("X-Key"); len(got) != 1 || got[0] != "" {
		t.Errorf("B saw X-Key %q", got)
	}
}

// A stream that drops before its task ends is picked up again with
// SubscribeToTask.
func TestDroppedStreamResubscribes(t *testing.T) {
	card := `{"name":"Flaky","capabilities":{"streaming":true},"skills":[{"id":"ask","name":"a","description":"d","tags":[]}],` +
		`"supportedInterfaces":[{"url":"%s/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`
	var methods []string
	url, _ := rawServer(t, card, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
			ID     string `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		methods = append(methods, req.Method)
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(result string) {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%q,\"result\":%s}\n\n", req.ID, result)
		}
		switch req.Method {
		case "SendStreamingMessage":
			ev(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`)
			// The connection ends here, the task still working.
		case "SubscribeToTask":
			ev(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`)
			ev(`{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","parts":[{"text":"picked up"}]}}}`)
			ev(`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`)
		}
	})
	_, r := mount(t, url, lodea2a.WithReadOnly())
	v, err := r.Call(context.Background(), "ask", map[string]any{"task": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res := v.(tool.Result); res.IsError || res.Content != "picked up" {
		t.Fatalf("result %+v", res)
	}
	if strings.Join(methods, ",") != "SendStreamingMessage,SubscribeToTask" {
		t.Errorf("methods %q", methods)
	}
}

// When picking up the dropped stream fails, the call says the agent
// stopped answering, after a bounded number of tries.
func TestDroppedStreamThatCannotBePickedUp(t *testing.T) {
	card := `{"name":"Flaky","capabilities":{"streaming":true},"skills":[{"id":"ask","name":"a","description":"d","tags":[]}],` +
		`"supportedInterfaces":[{"url":"%s/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`
	var methods []string
	url, _ := rawServer(t, card, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
			ID     string `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		methods = append(methods, req.Method)
		switch req.Method {
		case "SendStreamingMessage":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%q,\"result\":{\"task\":{\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n", req.ID)
		case "SubscribeToTask":
			http.Error(w, "gone", http.StatusBadGateway)
		}
	})
	_, r := mount(t, url, lodea2a.WithReadOnly())
	v, err := r.Call(context.Background(), "ask", map[string]any{"task": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res := v.(tool.Result); !res.IsError || res.Content != "The agent flaky stopped answering before its task ended (it was working)." {
		t.Fatalf("result %+v", res)
	}
	if strings.Join(methods, ",") != "SendStreamingMessage,SubscribeToTask" {
		t.Errorf("methods %q", methods)
	}
}
