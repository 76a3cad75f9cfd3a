// Command adkagent serves an agent of Google's Agent Development Kit
// (adk-go v2, its llmagent on a scripted model) over A2A with adk-go's
// own adka2a executor and a2a-go's server, on a loopback port it prints
// as "listening PORT". The tests of x/a2a start it as a counterpart lode
// did not write. It is a module of its own, apart from lode's: adk-go
// v2.2.0 needs an OpenTelemetry older than lode's.
//
// The model answers "ADK says: " and the user's last words (reporting 11
// input and 7 output tokens), or, when they
// start with "fail", fails. ADK_STREAMING=off makes the card say the agent
// does not stream. The command exits when its standard input ends.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	adka2a "google.golang.org/adk/v2/server/adka2a/v2"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

type scripted struct{}

func (scripted) Name() string { return "scripted" }

func (scripted) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	var last string
	for _, c := range req.Contents {
		if c.Role != genai.RoleUser {
			continue
		}
		for _, p := range c.Parts {
			if p.Text != "" {
				last = p.Text
			}
		}
	}
	return func(yield func(*model.LLMResponse, error) bool) {
		if strings.HasPrefix(last, "fail") {
			yield(nil, errors.New("the scripted model failed as asked"))
			return
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromText("ADK says: "+last, genai.RoleModel), TurnComplete: true,
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 11, CandidatesTokenCount: 7, TotalTokenCount: 18}}, nil)
	}
}

func main() {
	ag, err := llmagent.New(llmagent.Config{Name: "weather_agent", Description: "Answers questions about the weather.",
		Model: scripted{}, Instruction: "Answer questions about the weather."})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	card := &a2a.AgentCard{
		Name: ag.Name(), Description: ag.Description(), Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/invoke", a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Skills:              adka2a.BuildAgentSkills(ag),
		Capabilities:        a2a.AgentCapabilities{Streaming: os.Getenv("ADK_STREAMING") != "off"},
	}
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	exec := adka2a.NewExecutor(adka2a.ExecutorConfig{RunnerConfig: runner.Config{AppName: ag.Name(), Agent: ag, SessionService: session.InMemoryService()}})
	mux.Handle("/invoke", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec)))
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fmt.Printf("listening %d\n", ln.Addr().(*net.TCPAddr).Port)
	log.Fatal(http.Serve(ln, mux))
}
