package mcp

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// features holds what the client offers a server beyond tool calls:
// elicitation, sampling, roots, notifications and OAuth. Each lives in a
// file of its own.
type features struct {
	elicit   Elicitor
	sampling *sampling
	roots    []*sdk.Root
	notify   func(context.Context, Notification)
	oauth    auth.OAuthHandler
	rootsSet bool
	ping     time.Duration

	// track numbers progress tokens and ties them to their calls.
	track *progressTrack
}

// sdkOptions builds the go-sdk client options from the configured
// features, advertising only the capabilities the client serves.
func (c *Client) sdkOptions() *sdk.ClientOptions {
	f := &c.cfg.features
	caps := &sdk.ClientCapabilities{}
	opts := &sdk.ClientOptions{
		Capabilities:           caps,
		ToolListChangedHandler: c.onListChanged,
	}
	c.elicitOptions(opts)
	c.samplingOptions(opts)
	if f.rootsSet {
		caps.RootsV2 = &sdk.RootCapabilities{}
	}
	f.track = &progressTrack{}
	opts.ProgressNotificationHandler = c.onProgress
	opts.LoggingMessageHandler = c.onLog
	return opts
}

// setup gives the SDK client what it keeps itself: the roots.
func (c *Client) setup() {
	if len(c.cfg.features.roots) > 0 {
		c.sdk.AddRoots(c.cfg.features.roots...)
	}
}

// check reports features that cannot work with the chosen transport.
func (f *features) check(c *config) {
	if f.oauth != nil && c.url == "" {
		c.fail("WithOAuth applies only to WithHTTP")
	}
}
