package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// lode serve mounts a server behind OAuth with the login lode mcp login
// kept (its tools say they are read-only, so no approval is asked), and prints a mounted server's progress reports on stderr, as run
// and chat do, while stdout carries the protocol.
func TestServeUsesLoginsAndPrintsNotes(t *testing.T) {
	o := newOAuthServer(t)
	o.issued = []string{"token-1"}
	chatty := sdk.NewServer(&sdk.Implementation{Name: "chatty", Version: "1"}, nil)
	sdk.AddTool(chatty, &sdk.Tool{Name: "work", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
	})
	cs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return chatty }, nil))
	defer cs.Close()

	dir := writeConfig(t, "mcp:\n  - name: guarded\n    url: "+o.URL+"/mcp\n  - name: chatty\n    url: "+cs.URL+"\n")
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	store := &tokenStore{path: tokens}
	if err := store.put("guarded", login{URL: o.URL + "/mcp", ClientID: "lode-client", TokenURL: o.URL + "/token",
		Token: &oauth2.Token{AccessToken: "token-1", TokenType: "Bearer", RefreshToken: "refresh-1", Expiry: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	cmd, stdin, stdout, stderr := lodeProcess(t, map[string]string{EnvMCPTokens: tokens}, "serve", "--config", filepath.Join(dir, "lode.yaml"))
	call := func(id, name string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}` + "\n"
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		call("2", "guarded__secret")+call("3", "chatty__work"))
	stdout.waitFor(t, `"text":"42"`, 1)
	stdout.waitFor(t, `"text":"done"`, 1)
	stderr.waitFor(t, "  [chatty] work: 1/2 half\n", 1)
	stdin.Close()
	if code := waitProcess(t, cmd, stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// lode web mounts a server behind OAuth with the login lode mcp login
// kept; without it the mount is refused (401) and lode web exits.
func TestWebUsesLogins(t *testing.T) {
	o := newOAuthServer(t)
	o.issued = []string{"token-1"}
	dir := writeConfig(t, "mcp:\n  - name: guarded\n    url: "+o.URL+"/mcp\n")
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	if err := (&tokenStore{path: tokens}).put("guarded", login{URL: o.URL + "/mcp", ClientID: "lode-client", TokenURL: o.URL + "/token",
		Token: &oauth2.Token{AccessToken: "token-1", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 10)
	e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: lineWriter{lines}, interrupts: make(chan os.Signal),
		getenv: func(k string) string {
			if k == EnvMCPTokens {
				return tokens
			}
			return ""
		}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, e, []string{"web", "--config", filepath.Join(dir, "lode.yaml"), "--addr", "127.0.0.1:0", "--store", filepath.Join(dir, "threads"),
			"--base-url", "http://127.0.0.1:1/v1", "--model", "m"})
	}()
	var said []string
	for {
		select {
		case l := <-lines:
			said = append(said, l)
			if !strings.Contains(l, "chat at") {
				continue
			}
			if len(said) != 1 || !strings.HasPrefix(l, "lode web: ") {
				cancel()
				<-done
				t.Fatalf("lode web said %q", said)
			}
			cancel()
			if code := <-done; code != 0 {
				t.Fatalf("lode web ended with %d", code)
			}
			return
		case code := <-done:
			t.Fatalf("lode web exited with %d: %q", code, said)
		}
	}
}
