package gemini

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

// Real exchanges with the Gemini API, recorded by langchaingo's tests in
// httprr files and published in its module. They are fetched into the
// module cache at test time, never committed.
const replayModule = "github.com/tmc/langchaingo@v0.1.14"

var replayFiles = []string{
	"llms/googleai/testdata/TestGoogleAICall.httprr",
	"llms/googleai/testdata/TestGoogleAIErrorHandling.httprr",
	"llms/googleai/testdata/TestGoogleAIGenerateContent.httprr",
	"llms/googleai/testdata/TestGoogleAIGenerateContentWithMultipleMessages.httprr",
	"llms/googleai/testdata/TestGoogleAIGenerateContentWithSystemMessage.httprr",
	"llms/googleai/testdata/TestGoogleAIMultiModalContent.httprr",
	"llms/googleai/testdata/TestGoogleAIToolCallResponse.httprr",
	"llms/googleai/testdata/TestGoogleAIWithHarmThreshold.httprr",
	"llms/googleai/testdata/TestGoogleAIWithJSONMode.httprr",
	"llms/googleai/testdata/TestGoogleAIWithOptions.httprr",
	"llms/googleai/testdata/TestGoogleAIWithStreaming.httprr",
	"llms/googleai/testdata/TestGoogleAIWithTools.httprr",
	"chains/testdata/TestLLMChainWithGoogleAI.httprr",
}

var (
	replayOnce sync.Once
	replayRoot string
	replayErr  error
)

// recordings returns the module's directory, or skips when the module
// cannot be fetched here (CI fetches it).
func recordings(t *testing.T) string {
	t.Helper()
	replayOnce.Do(func() {
		out, err := exec.Command("go", "mod", "download", "-json", replayModule).Output()
		var info struct{ Dir, Error string }
		if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
			err = errors.New(info.Error)
		}
		if err != nil {
			replayErr = fmt.Errorf("go mod download %s: %v", replayModule, err)
			return
		}
		replayRoot = info.Dir
	})
	if replayErr != nil {
		t.Skipf("the recordings cannot be fetched here: %v", replayErr)
	}
	return replayRoot
}

// exchange is one recorded request and its answer.
type exchange struct {
	method, path string
	reqBody      []byte
	status       int
	header       http.Header
	body         []byte
}

// readHTTPRR reads an httprr trace: a header line, then for each exchange a
// line "reqlen resplen" and the request and response as sent on the wire.
func readHTTPRR(path string) ([]exchange, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	head, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(head) != "httprr trace v1" {
		return nil, fmt.Errorf("%s: not an httprr v1 trace", path)
	}
	var out []exchange
	for len(rest) > 0 {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("%s: a cut record header", path)
		}
		var nreq, nresp int
		if _, err := fmt.Sscanf(string(line), "%d %d", &nreq, &nresp); err != nil || nreq+nresp > len(after) {
			return nil, fmt.Errorf("%s: bad record header %q", path, line)
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(after[:nreq])))
		if err != nil {
			return nil, err
		}
		reqBody, _ := io.ReadAll(req.Body)
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(after[nreq:nreq+nresp])), req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		out = append(out, exchange{method: req.Method, path: req.URL.Path, reqBody: reqBody, status: resp.StatusCode, header: resp.Header, body: body})
		rest = after[nreq+nresp:]
	}
	return out, nil
}

// replayServer answers each request with the next recorded answer, byte for
// byte, after checking it asks for the recorded method and endpoint.
type replayServer struct {
	t    *testing.T
	mu   sync.Mutex
	next []exchange
	sent []string
}

func (s *replayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.next) == 0 {
		s.t.Errorf("an unrecorded request: %s %s", r.Method, r.URL.Path)
		http.Error(w, "no recording left", 599)
		return
	}
	ex := s.next[0]
	s.next = s.next[1:]
	if r.Method != ex.method || r.URL.Path != ex.path {
		s.t.Errorf("request %s %s, recorded %s %s", r.Method, r.URL.Path, ex.method, ex.path)
	}
	s.sent = append(s.sent, string(b))
	if ct := ex.header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(ex.status)
	w.Write(ex.body)
}

// The recorded request's wire format, as far as a lode request needs it.
type wireRequest struct {
	Contents          []wireContent `json:"contents"`
	SystemInstruction *wireContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		MaxOutputTokens  int      `json:"maxOutputTokens"`
		Temperature      *float64 `json:"temperature"`
		ResponseMimeType string   `json:"responseMimeType"`
	} `json:"generationConfig"`
}

type wireContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text         string `json:"text"`
		FunctionCall *struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
		FunctionResponse *struct {
			Name     string          `json:"name"`
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
		InlineData *struct {
			MimeType string `json:"mimeType"`
			Data     string `json:"data"`
		} `json:"inlineData"`
	} `json:"parts"`
}

// lodeRequest is the lode request that asks what the recorded one asked.
func lodeRequest(t *testing.T, raw []byte) *provider.Request {
	var w wireRequest
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatalf("recorded request: %v", err)
	}
	req := &provider.Request{MaxTokens: w.GenerationConfig.MaxOutputTokens, Temperature: w.GenerationConfig.Temperature}
	if w.GenerationConfig.ResponseMimeType == "application/json" {
		req.ResponseFormat = &provider.ResponseFormat{Type: provider.ResponseFormatJSONObject}
	}
	if s := w.SystemInstruction; s != nil {
		var arts []artifact.Artifact
		for _, p := range s.Parts {
			arts = append(arts, artifact.Text{Content: p.Text})
		}
		req.Turns = append(req.Turns, ledger.Turn{Role: ledger.RoleSystem, Artifacts: arts})
	}
	for _, c := range w.Contents {
		var arts, results []artifact.Artifact
		for i, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				arts = append(arts, artifact.ToolCall{ID: idPrefix + p.FunctionCall.Name, Name: p.FunctionCall.Name, Arguments: string(p.FunctionCall.Args)})
			case p.FunctionResponse != nil:
				results = append(results, artifact.ToolResult{ToolCallID: idPrefix + p.FunctionResponse.Name, Name: p.FunctionResponse.Name, Content: string(p.FunctionResponse.Response)})
			case p.InlineData != nil:
				data, err := base64.StdEncoding.DecodeString(p.InlineData.Data)
				if err != nil {
					t.Fatalf("part %d: %v", i, err)
				}
				arts = append(arts, artifact.Image{MIMEType: p.InlineData.MimeType, Data: data})
			default:
				arts = append(arts, artifact.Text{Content: p.Text})
			}
		}
		role := ledger.RoleUser
		if c.Role == "model" {
			role = ledger.RoleAssistant
		}
		if len(results) > 0 {
			req.Turns = append(req.Turns, ledger.Turn{Role: ledger.RoleTool, Artifacts: results})
		}
		if len(arts) > 0 {
			req.Turns = append(req.Turns, ledger.Turn{Role: role, Artifacts: arts})
		}
	}
	for _, tl := range w.Tools {
		for _, d := range tl.FunctionDeclarations {
			req.Tools = append(req.Tools, tool.Tool{Name: d.Name, Description: d.Description, Schema: []byte(`{"type":"object","properties":{"location":{"type":"string"}}}`)})
		}
	}
	return req
}

// recordedAnswer is what the recorded answer says, read independently of
// the adapter: text, calls, usage, finish reason, or the error.
type recordedAnswer struct {
	text   string
	calls  []string // name + canonical args
	usage  map[string]int64
	finish any
	errObj *googleError
}

func readRecorded(t *testing.T, ex exchange) recordedAnswer {
	var a recordedAnswer
	if ex.status != 200 {
		var e struct{ Error *googleError }
		if err := json.Unmarshal(ex.body, &e); err != nil || e.Error == nil {
			t.Fatalf("recorded error: %v", err)
		}
		a.errObj = e.Error
		return a
	}
	var chunks []map[string]any
	if bytes.HasPrefix(bytes.TrimSpace(ex.body), []byte("[")) {
		if err := json.Unmarshal(ex.body, &chunks); err != nil {
			t.Fatal(err)
		}
	} else {
		var one map[string]any
		if err := json.Unmarshal(ex.body, &one); err != nil {
			t.Fatal(err)
		}
		chunks = []map[string]any{one}
	}
	for _, c := range chunks {
		if u, ok := c["usageMetadata"].(map[string]any); ok {
			a.usage = map[string]int64{}
			for k, v := range u {
				if f, ok := v.(float64); ok {
					a.usage[k] = int64(f)
				}
			}
		}
		cand, _ := dig(c, "candidates", 0).(map[string]any)
		if cand == nil {
			continue
		}
		if fr, ok := cand["finishReason"]; ok {
			a.finish = fr
		}
		parts, _ := dig(cand, "content", "parts").([]any)
		for _, p := range parts {
			pm := p.(map[string]any)
			if s, ok := pm["text"].(string); ok && pm["thought"] != true {
				a.text += s
			}
			if fc, ok := pm["functionCall"].(map[string]any); ok {
				args, _ := json.Marshal(fc["args"])
				a.calls = append(a.calls, fmt.Sprint(fc["name"])+string(args))
			}
		}
	}
	return a
}

func TestReplayRecordedSessions(t *testing.T) {
	root := recordings(t)
	total, exact := 0, 0
	for _, name := range replayFiles {
		t.Run(filepath.Base(name), func(t *testing.T) {
			exs, err := readHTTPRR(filepath.Join(root, name))
			if err != nil {
				t.Fatal(err)
			}
			rs := &replayServer{t: t, next: exs}
			srv := httptest.NewServer(rs)
			defer srv.Close()
			for i, ex := range exs {
				total++
				model, method, ok := strings.Cut(strings.TrimPrefix(ex.path, "/v1beta/models/"), ":")
				if !ok {
					t.Fatalf("exchange %d: endpoint %s", i, ex.path)
				}
				stream := method == "streamGenerateContent"
				p, err := New(WithModel(model), WithAPIKey("replay-key"), WithBaseURL(srv.URL), WithStreaming(stream),
					WithMaxRetries(0), WithEnv(func(string) string { return "" }), testIDs())
				if err != nil {
					t.Fatal(err)
				}
				req := lodeRequest(t, ex.reqBody)
				want := readRecorded(t, ex)
				deltas, whole, err := collect(p, req)
				if !sameAnswer(t, i, want, deltas, whole, err, stream) {
					continue
				}
				if !sameQuestion(t, i, ex.reqBody, rs.sent[len(rs.sent)-1]) {
					continue
				}
				exact++
			}
		})
	}
	t.Logf("%d of %d recorded exchanges replayed exactly", exact, total)
	if total == 0 {
		t.Fatal("no recorded exchange was replayed")
	}
}

// sameAnswer compares what the adapter yielded with the recording.
func sameAnswer(t *testing.T, i int, want recordedAnswer, deltas, whole []artifact.Artifact, err error, stream bool) bool {
	t.Helper()
	if want.errObj != nil {
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != want.errObj.Code || ae.Status != want.errObj.Status || ae.Message != want.errObj.Message {
			t.Errorf("exchange %d: err = %v, recorded %+v", i, err, want.errObj)
			return false
		}
		return true
	}
	if err != nil {
		t.Errorf("exchange %d: %v", i, err)
		return false
	}
	var text, streamed string
	var calls []string
	var usage artifact.Usage
	var finish string
	for _, a := range whole {
		switch a := a.(type) {
		case artifact.Text:
			text += a.Content
		case artifact.ToolCall:
			var v any
			if json.Unmarshal([]byte(a.Arguments), &v) != nil {
				t.Errorf("exchange %d: arguments %q", i, a.Arguments)
			}
			args, _ := json.Marshal(v)
			calls = append(calls, a.Name+string(args))
		case artifact.Usage:
			usage = a
		case artifact.Finish:
			finish = a.Reason
		}
	}
	for _, d := range deltas {
		if d, ok := d.(artifact.TextDelta); ok {
			streamed += d.Content
		}
	}
	ok := true
	if text != want.text || (stream && streamed != want.text) {
		t.Errorf("exchange %d: text %q (streamed %q), recorded %q", i, text, streamed, want.text)
		ok = false
	}
	if !reflect.DeepEqual(calls, want.calls) {
		t.Errorf("exchange %d: calls %v, recorded %v", i, calls, want.calls)
		ok = false
	}
	wu := artifact.Usage{
		InputTokens:       want.usage["promptTokenCount"] + want.usage["toolUsePromptTokenCount"],
		OutputTokens:      want.usage["candidatesTokenCount"] + want.usage["thoughtsTokenCount"],
		CachedInputTokens: want.usage["cachedContentTokenCount"],
		ReasoningTokens:   want.usage["thoughtsTokenCount"],
	}
	if usage != wu || (want.usage["totalTokenCount"] != 0 && usage.Total() != want.usage["totalTokenCount"]) {
		t.Errorf("exchange %d: usage %+v, recorded %v", i, usage, want.usage)
		ok = false
	}
	wf := recordedFinish(want.finish)
	if len(want.calls) > 0 && wf == "stop" {
		wf = "tool_calls"
	}
	if finish != wf {
		t.Errorf("exchange %d: finish %q, recorded %v", i, finish, want.finish)
		ok = false
	}
	return ok
}

// recordedFinish is lode's word for a recorded finish reason (a name or,
// with enum-encoding=int, a number).
func recordedFinish(v any) string {
	name := fmt.Sprint(v)
	if f, ok := v.(float64); ok && int(f) < len(finishNames) {
		name = finishNames[int(f)]
	}
	if r, ok := finishReasons[name]; ok {
		return r
	}
	return strings.ToLower(name)
}

// sameQuestion checks the adapter sent the recorded conversation: the same
// roles and the same texts, calls and responses, in order.
func sameQuestion(t *testing.T, i int, recorded []byte, sent string) bool {
	t.Helper()
	var a, b wireRequest
	if json.Unmarshal(recorded, &a) != nil || json.Unmarshal([]byte(sent), &b) != nil {
		t.Errorf("exchange %d: a request is not JSON", i)
		return false
	}
	summary := func(w wireRequest) string {
		var s strings.Builder
		if w.SystemInstruction != nil {
			for _, p := range w.SystemInstruction.Parts {
				s.WriteString("system:" + p.Text + "|")
			}
		}
		for _, c := range w.Contents {
			for _, p := range c.Parts {
				switch {
				case p.FunctionCall != nil:
					s.WriteString(c.Role + ":call " + p.FunctionCall.Name + "|")
				case p.FunctionResponse != nil:
					s.WriteString(c.Role + ":response " + p.FunctionResponse.Name + "|")
				case p.InlineData != nil:
					s.WriteString(c.Role + ":data " + p.InlineData.MimeType + " " + strconv.Itoa(len(p.InlineData.Data)) + "|")
				default:
					s.WriteString(c.Role + ":" + p.Text + "|")
				}
			}
		}
		return s.String()
	}
	if summary(a) != summary(b) {
		t.Errorf("exchange %d: sent\n%s\nrecorded\n%s", i, summary(b), summary(a))
		return false
	}
	return true
}
