package mcp

import (
	"context"
	"encoding/json"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ElicitAction is how the person answered an elicitation.
type ElicitAction string

// The answers MCP defines.
const (
	// ElicitAccept: the person gave the input (form) or went to the link (URL).
	ElicitAccept ElicitAction = "accept"
	// ElicitDecline: the person said no.
	ElicitDecline ElicitAction = "decline"
	// ElicitCancel: the person dismissed the request without choosing.
	ElicitCancel ElicitAction = "cancel"
)

// Elicitation modes.
const (
	// ElicitForm asks for values described by a flat JSON Schema.
	ElicitForm = "form"
	// ElicitURL asks the person to visit a link (to sign in, to pay) out of band.
	ElicitURL = "url"
)

// ElicitRequest is what a server asks the person.
type ElicitRequest struct {
	// Server is the client's name (WithName).
	Server string
	// Mode is ElicitForm or ElicitURL.
	Mode string
	// Message says what is asked and why, in the server's words.
	Message string
	// Schema, in form mode, describes the values asked for: an object
	// whose properties are strings, numbers, booleans or enums, with
	// their titles, descriptions and defaults.
	Schema map[string]any
	// URL and ID, in URL mode, are the link to show and the
	// elicitation's identifier.
	URL, ID string
}

// ElicitResult is the person's answer. Content, for an accepted form,
// holds the values given; properties left out get their schema defaults
// before the answer is sent.
type ElicitResult struct {
	Action  ElicitAction
	Content map[string]any
}

// Elicitor answers a server's elicitation, usually by asking a person.
// It runs while the server's tool call waits, so it should honour ctx.
// An error is sent to the server as a failed request.
type Elicitor func(ctx context.Context, req ElicitRequest) (ElicitResult, error)

// WithElicitation lets servers ask the person for input through fn, in
// form and URL modes. Without it (or with nil) the client still accepts
// form requests and declines each one, so that a server which asks
// anyway gets a polite no rather than a protocol error.
func WithElicitation(fn Elicitor) Option { return func(c *config) { c.features.elicit = fn } }

func (c *Client) elicitOptions(opts *sdk.ClientOptions) {
	caps := &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}
	if c.cfg.features.elicit != nil {
		caps.URL = &sdk.URLElicitationCapabilities{}
	}
	opts.Capabilities.Elicitation = caps
	opts.ElicitationHandler = c.onElicit
}

// errBadElicit is sent when an application's answer has no known action.
var errBadElicit = errors.New("mcp: the elicitation callback answered with an unknown action")

func (c *Client) onElicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	fn := c.cfg.features.elicit
	if fn == nil {
		return &sdk.ElicitResult{Action: string(ElicitDecline)}, nil
	}
	p := req.Params
	er := ElicitRequest{Server: c.cfg.name, Mode: p.Mode, Message: p.Message, URL: p.URL, ID: p.ElicitationID}
	if er.Mode == "" {
		er.Mode = ElicitForm
	}
	if p.RequestedSchema != nil {
		// The schema arrives as whatever the transport decoded; hand the
		// application a plain JSON object.
		b, err := json.Marshal(p.RequestedSchema)
		if err == nil {
			_ = json.Unmarshal(b, &er.Schema)
		}
	}
	res, err := fn(ctx, er)
	if err != nil {
		return nil, err
	}
	switch res.Action {
	case ElicitAccept:
		content := res.Content
		if content == nil && er.Mode == ElicitForm {
			// The SDK fills in schema defaults only into a present map.
			content = map[string]any{}
		}
		return &sdk.ElicitResult{Action: string(res.Action), Content: content}, nil
	case ElicitDecline, ElicitCancel:
		return &sdk.ElicitResult{Action: string(res.Action)}, nil
	}
	return nil, errBadElicit
}
