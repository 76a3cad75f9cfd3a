// Command caller is an ADK agent whose root agent is a remote A2A agent
// (remoteagent.NewA2A): it says each argument after the URL in turn, in
// one session, and prints one JSON line per message with the text of the
// final events and any error ADK reported.
//
//	caller URL MESSAGE...
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"google.golang.org/adk/v2/agent"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

type reply struct {
	Text  string `json:"text"`
	Error string `json:"error,omitempty"`
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: caller URL MESSAGE...")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "caller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url string, messages []string) error {
	remote, err := remoteagent.NewA2A(remoteagent.A2AConfig{
		Name:              "helpdesk",
		Description:       "a remote agent",
		AgentCardProvider: remoteagent.NewAgentCardProvider(url),
	})
	if err != nil {
		return err
	}
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "caller", Agent: remote, SessionService: svc})
	if err != nil {
		return err
	}
	s, err := svc.Create(ctx, &session.CreateRequest{AppName: "caller", UserID: "u"})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for _, m := range messages {
		var out reply
		var b strings.Builder
		for ev, err := range r.Run(ctx, "u", s.Session.ID(), genai.NewContentFromText(m, genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				out.Error = err.Error()
				break
			}
			if ev.ErrorMessage != "" {
				out.Error = ev.ErrorMessage
			}
			if ev.Partial || ev.Content == nil {
				continue
			}
			for _, p := range ev.Content.Parts {
				b.WriteString(p.Text)
			}
		}
		out.Text = b.String()
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	return nil
}
