package cli

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// The real process, fed a line that is not JSON between two calls and then
// the end of stdin: it answers both calls and the bad line, and exits 0.
func TestServeStdioSurvivesAMalformedLine(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\n")
	cmd, stdin, stdout, stderr := lodeProcess(t, nil, "serve", "--config", filepath.Join(dir, "lode.yaml"))
	call := func(id, expr string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"calculator__eval","arguments":{"expression":"` + expr + `"}}}` + "\n"
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		call("2", "1+1")+
		"{oops\n"+
		call("3", "2*3"))
	stdin.Close()
	if code := waitProcess(t, cmd, stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("stdout has a line that is not JSON: %q", line)
		}
		got[string(r.ID)] = line
		if len(r.Result.Content) == 1 {
			got[string(r.ID)] = r.Result.Content[0].Text
		}
	}
	wantErr := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: line 4 is not JSON: invalid character 'o' looking for beginning of object key string"}}`
	if len(got) != 4 || got["1"] == "" || !strings.HasPrefix(got["2"], "2") || !strings.HasPrefix(got["3"], "6") || got["null"] != wantErr {
		t.Fatalf("replies by id: %q\nstdout:\n%s\nstderr:\n%s", got, stdout.String(), stderr.String())
	}
}
