package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/anthropic"
)

// A typed answer through Claude's structured outputs: x/output's ModeAuto
// sees that claude-sonnet-4-5 takes them and sends the answer's schema as
// output_config.format. The loopback server stands in for the API.
func Example_structuredOutputs() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			OutputConfig struct {
				Format struct {
					Type string `json:"type"`
				} `json:"format"`
			} `json:"output_config"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		fmt.Println("format sent:", body.OutputConfig.Format.Type)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"{\"city\":\"Paris\",\"country\":\"FR\"}"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":12}}`)
	}))
	defer srv.Close()

	p, err := anthropic.New(anthropic.WithModel("claude-sonnet-4-5"), anthropic.WithBaseURL(srv.URL),
		anthropic.WithStreaming(false), anthropic.WithEnv(func(string) string { return "" }))
	if err != nil {
		panic(err)
	}
	type place struct {
		City    string `json:"city"`
		Country string `json:"country" jsonschema:"description=ISO 3166-1 alpha-2"`
	}
	th := ledger.NewThread()
	th.Append(ledger.RoleUser, artifact.Text{Content: "Where is the Louvre?"})
	got, err := output.Run[place](context.Background(), nil, th, p)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", got)
	fmt.Println(anthropic.StructuredOutputs("claude-opus-4-1"), anthropic.StructuredOutputs("anthropic.claude-haiku-4-5-20251001-v1:0"))
	// Output:
	// format sent: json_schema
	// {City:Paris Country:FR}
	// false true
}
