package mcp

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// DefaultPingTimeout is how long a server has to answer the ping sent
// after one of its requests ran out of time, unless WithPingTimeout says
// otherwise.
const DefaultPingTimeout = 5 * time.Second

// WithPingTimeout sets how long a server has to answer the ping that
// follows a request that ran out of time (see WithCallTimeout): one that
// answers keeps its session, one that does not is replaced. Zero means
// DefaultPingTimeout; a negative duration sends no ping and replaces the
// session at once.
func WithPingTimeout(d time.Duration) Option { return func(c *config) { c.features.ping = d } }

// alive reports whether the session still answers a ping: a request that
// ran out of time may be a slow tool on a healthy server, and replacing a
// healthy session would lose its state and the other calls in flight.
func (c *Client) alive(sess *conn) bool {
	d := c.cfg.features.ping
	switch {
	case d < 0:
		return false
	case d == 0:
		d = DefaultPingTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	defer context.AfterFunc(c.life, cancel)()
	defer context.AfterFunc(sess.ctx, cancel)()
	// Any answer will do: revisions from 2026-07-28 on have no ping, and
	// a server speaking them answers with "method not found".
	err := sess.cs.Ping(ctx, nil)
	var rpc *jsonrpc.Error
	return err == nil || (errors.As(err, &rpc) && rpc.Code != codeRejected)
}
