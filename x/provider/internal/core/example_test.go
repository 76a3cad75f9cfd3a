package core_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/core"
	"github.com/lodeworks/lode/x/provider/internal/genaispan"
)

// An adapter's New and Invoke, reduced to what the core does for them.
func Example() {
	endpoint := core.Endpoint{
		Prefix: "acme", EnvAPIKey: "ACME_API_KEY", EnvBaseURL: "ACME_BASE_URL",
		DefaultBaseURL: "https://api.acme.test/v1",
		ErrNoModel:     errors.New("acme: no model"), ErrNoAPIKey: errors.New("acme: no API key"),
	}
	// The adapter's options fill these.
	s := core.Settings{Model: "acme-1", APIKey: "k", Getenv: func(string) string { return "" }}
	s.SetMaxRetries(1)
	u, err := endpoint.Resolve(&s)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := core.NewConn(&s, u, core.Defaults{MaxRetries: 2, MaxRetryWait: time.Minute, IdleTimeout: 2 * time.Minute})
	fmt.Println(c.BaseURL, c.ServerPort, c.MaxRetries, c.IdleTimeout)

	inv := core.Invocation{Provider: "acme", ErrorType: func(error) string { return "_OTHER" }}
	inv.Run(context.Background(), &c, &provider.Request{}, func(_ artifact.Artifact, err error) bool { fmt.Println("failed:", err); return false },
		func(ctx context.Context, _ core.Yield) (*genaispan.Result, error) {
			ctx, _, stop := core.Limits(ctx, c.Timeout, c.IdleTimeout, func(idle bool, d time.Duration) error {
				return fmt.Errorf("acme: limit of %s", d)
			})
			defer stop()
			// Send the request with a retry.Sender and read the answer.
			return &genaispan.Result{Model: c.Model}, errors.New("acme: 503 Service Unavailable")
		})
	// Output:
	// https://api.acme.test/v1 443 1 2m0s
	// failed: acme: 503 Service Unavailable
}
