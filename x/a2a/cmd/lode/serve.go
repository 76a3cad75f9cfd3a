package main

import (
	"context"
	"fmt"
	"net"

	"github.com/a2aproject/a2a-go/v2/a2a"

	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/cli"
)

// a2aServer is lode serve --a2a: an x/a2a Server for lode.yaml's agent.
type a2aServer struct{}

func (a2aServer) ServeA2A(ctx context.Context, ln net.Listener, a *cli.A2AAgent) error {
	opts := []lodea2a.Option{
		lodea2a.WithLoopOptions(a.Loop...),
		lodea2a.WithTools(a.Tools...),
		lodea2a.WithCard(a2a.AgentCard{Name: a.Card.Name, Description: a.Card.Description}),
		lodea2a.WithLogger(a.Logger),
	}
	if len(a.AllowedHosts) > 0 {
		opts = append(opts, lodea2a.WithAllowedHosts(a.AllowedHosts...))
	}
	if a.Card.URL != "" {
		opts = append(opts, lodea2a.WithURL(a.Card.URL))
	}
	if len(a.Card.Push) > 0 {
		opts = append(opts, lodea2a.WithPushDestinations(a.Card.Push...))
	}
	if a.Authenticator != nil {
		opts = append(opts, lodea2a.WithAuthenticator(a.Authenticator))
	} else {
		opts = append(opts, lodea2a.WithAnonymousRoles(a.Roles...))
	}
	srv, err := lodea2a.NewServer(a.Provider, a.Store, opts...)
	if err != nil {
		return err
	}
	done, err := srv.Recover(ctx)
	if len(done) > 0 && a.Logger != nil {
		a.Logger.Info(fmt.Sprintf("lode serve: finished %d task(s) a stopped process left working", len(done)), "tasks", done)
	}
	if err != nil {
		srv.Close()
		return err
	}
	return srv.Serve(ctx, ln)
}
