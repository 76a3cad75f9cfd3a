package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeResponses answers every request with one streamed answer in the
// Responses API's wire format, and keeps what it was sent.
type fakeResponses struct {
	answer string
	requestLog
}

func (f *fakeResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.record(r, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), r.URL.Path)
	text, _ := json.Marshal(f.answer)
	w.Header().Set("Content-Type", "text/event-stream")
	for _, data := range []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","model":"gpt-test","status":"in_progress","output":[]}}`,
		`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":` + string(text) + `}`,
		`{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":` + string(text) + `}]}}`,
		`{"type":"response.completed","sequence_number":4,"response":{"id":"resp_1","object":"response","model":"gpt-test","status":"completed","output":[],"usage":{"input_tokens":12,"output_tokens":4,"total_tokens":16}}}`,
	} {
		var head struct{ Type string }
		_ = json.Unmarshal([]byte(data), &head)
		io.WriteString(w, "event: "+head.Type+"\ndata: "+data+"\n\n")
	}
}

func TestRunAgainstResponsesServer(t *testing.T) {
	cases := []struct {
		name   string
		config string
		vars   func(url string) map[string]string
		args   []string
		key    string
	}{
		{"provider in lode.yaml, URL and key from the environment",
			"model:\n  provider: openai-responses\n  name: gpt-test\n",
			func(u string) map[string]string {
				return map[string]string{"OPENAI_BASE_URL": u + "/v1", "OPENAI_API_KEY": "sk-openai"}
			},
			[]string{"run", "--system", "Be exact.", "hello"}, "sk-openai"},
		{"--provider flag, key from api_key_env",
			"model:\n  name: gpt-test\n  api_key_env: MY_KEY\n",
			func(u string) map[string]string {
				return map[string]string{"OPENAI_BASE_URL": u + "/v1", "MY_KEY": "mine", "OPENAI_API_KEY": "not this one"}
			},
			[]string{"run", "--provider", "openai-responses", "--system", "Be exact.", "hello"}, "mine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := &fakeResponses{answer: "Hello from the Responses API."}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r := lode(t, writeConfig(t, c.config), c.vars(srv.URL), "", c.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if r.stdout != "Hello from the Responses API.\n" {
				t.Errorf("stdout = %q", r.stdout)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if len(fake.bodies) != 1 || fake.paths[0] != "/v1/responses" || fake.keys[0] != c.key {
				t.Fatalf("requests: %d, paths %v, keys %v", len(fake.bodies), fake.paths, fake.keys)
			}
			body := fake.bodies[0]
			if body["model"] != "gpt-test" || body["stream"] != true || body["store"] != false {
				t.Errorf("body = %v", body)
			}
			if key, _ := body["prompt_cache_key"].(string); key == "" {
				t.Errorf("no prompt_cache_key from the thread: %v", body)
			}
			input, _ := json.Marshal(body["input"])
			if !strings.HasPrefix(string(input), `[{"content":"Be exact.","role":"system","type":"message"},{"content":"hello","role":"user","type":"message"}`) {
				t.Errorf("input = %s", input)
			}
		})
	}
}

func TestResponsesBadInputsAreOneClearLine(t *testing.T) {
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: bad.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
	}))
	defer unauthorized.Close()
	cases := []struct {
		name   string
		config string
		vars   map[string]string
		want   string
	}{
		{"no model", "model:\n  provider: openai-responses\n", map[string]string{"OPENAI_API_KEY": "k"},
			"lode: no model named: set --model, LODE_MODEL or model.name in lode.yaml"},
		{"wrong key", "model:\n  provider: openai-responses\n  name: gpt-test\n", map[string]string{"OPENAI_API_KEY": "bad", "OPENAI_BASE_URL": unauthorized.URL + "/v1"},
			"lode: responses: 401 Unauthorized: Incorrect API key provided: bad. — check the API key in $OPENAI_API_KEY (model.api_key_env in lode.yaml names the variable)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lode(t, writeConfig(t, c.config), c.vars, "", "run", "hi")
			if r.code != 1 || strings.TrimSpace(r.stderr) != c.want {
				t.Errorf("exit %d, stderr %q\nwant %q", r.code, r.stderr, c.want)
			}
		})
	}
}
