package main

import (
	"context"
	"io"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/cli"
)

// caller mounts lode.yaml's a2a: agents with x/a2a.
type caller struct{}

func (caller) Mount(ctx context.Context, reg tool.Registry, ag cli.A2ARemote) (io.Closer, error) {
	opts := []a2a.RemoteOption{
		a2a.WithName(ag.Name),
		a2a.WithTimeout(ag.Timeout),
		a2a.WithLabels(a2a.Labels{TrustOutput: ag.TrustOutput, Private: ag.Private, SendsOut: ag.SendsOut}),
	}
	if ag.Token != "" {
		opts = append(opts, a2a.WithBearerToken(ag.Token))
	}
	for k, v := range ag.Headers {
		opts = append(opts, a2a.WithHeader(k, v))
	}
	if ag.ReadOnly {
		opts = append(opts, a2a.WithReadOnly())
	}
	if ag.HTTPClient != nil {
		opts = append(opts, a2a.WithHTTPClient(ag.HTTPClient))
	}
	return a2a.Mount(ctx, reg, ag.URL, opts...)
}
