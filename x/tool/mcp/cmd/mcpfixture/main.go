package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/mcp/internal/fixture"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpfixture:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: mcpfixture serve [-http ADDR] | mcpfixture client URL")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout)
	case "client":
		if len(args) < 2 {
			return errors.New("usage: mcpfixture client URL")
		}
		return client(ctx, args[len(args)-1], os.Getenv("MCP_CONFORMANCE_SCENARIO"), stdout)
	}
	return fmt.Errorf("unknown command %q; want serve or client", args[0])
}

func serve(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("http", "", "serve streamable HTTP on this address instead of stdio")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv, err := fixture.NewServer()
	if err != nil {
		return err
	}
	if *addr == "" {
		return srv.ServeStdio(ctx)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening on http://%s/mcp\n", ln.Addr())
	return srv.Serve(ctx, ln)
}

// client mounts the scenario's server in a registry and calls its tools
// through the tool handler, as an agent would. It answers elicitations by
// accepting with no values (so the schema defaults fill the form), and
// authorises with the go-sdk's authorization code handler, whose browser
// step is a plain request that follows no redirect: the suite's
// authorization server redirects at once.
func client(ctx context.Context, url, scenario string, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	opts := []mcp.Option{
		mcp.WithName("conformance"), mcp.WithHTTP(url), mcp.WithCallTimeout(10 * time.Second),
		mcp.WithElicitation(func(context.Context, mcp.ElicitRequest) (mcp.ElicitResult, error) {
			return mcp.ElicitResult{Action: mcp.ElicitAccept}, nil
		}),
	}
	if strings.HasPrefix(scenario, "auth/") {
		h, err := oauthHandler(os.Getenv("MCP_CONFORMANCE_CONTEXT"))
		if err != nil {
			return err
		}
		opts = append(opts, mcp.WithOAuth(h))
	}
	c, err := mcp.NewClient(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Connect(ctx); err != nil {
		return err
	}
	reg := tool.NewRegistry(tool.WithMCPServer(c))
	if err := reg.Err(); err != nil {
		return err
	}
	var names []string
	for _, t := range reg.Tools() {
		names = append(names, t.Name)
	}
	fmt.Fprintf(stdout, "scenario %q: tools %s\n", scenario, strings.Join(names, ", "))
	h := xtool.NewHandler(reg)
	for _, call := range []struct{ name, args string }{
		{"add_numbers", `{"a":5,"b":3}`},
		{"test_client_elicitation_defaults", `{}`},
		{"test_reconnection", `{}`},
		{"test-tool", `{}`},
	} {
		name := "conformance__" + call.name
		if _, ok := reg.Lookup(name); !ok {
			continue
		}
		res := h.Execute(ctx, artifact.ToolCall{ID: call.name, Name: name, Arguments: call.args})
		fmt.Fprintf(stdout, "%s: %s\n", call.name, res.Content)
		if res.IsError {
			return fmt.Errorf("%s failed: %s", call.name, res.Content)
		}
	}
	return c.Close()
}

// oauthHandler makes the go-sdk's authorization code handler the suite's
// auth scenarios expect: a client ID metadata document, dynamic
// registration, and the pre-registered client the scenario's context
// names, if any.
func oauthHandler(scenarioContext string) (*auth.AuthorizationCodeHandler, error) {
	const redirect = "http://localhost:3000/callback"
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:                    redirect,
		AuthorizationCodeFetcher:       followOnce,
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: "https://conformance-test.local/client-metadata.json"},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{redirect}},
		},
	}
	var sc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if scenarioContext != "" {
		if err := json.Unmarshal([]byte(scenarioContext), &sc); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	if sc.ClientID != "" && sc.ClientSecret != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{
			ClientID:         sc.ClientID,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: sc.ClientSecret},
		}
	}
	return auth.NewAuthorizationCodeHandler(cfg)
}

// followOnce plays the person's browser: it opens the authorization URL
// and reads the code, state and issuer from the redirect it gets back.
func followOnce(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := neturl.Parse(resp.Header.Get("Location"))
	if err != nil || loc.String() == "" {
		return nil, fmt.Errorf("authorization server answered %s without a usable redirect", resp.Status)
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
