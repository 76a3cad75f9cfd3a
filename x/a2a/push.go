package a2a

import (
	"context"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
)

// pushConfigs keeps callers' push configs, refusing any whose URL is not
// under one of the operator's destinations: a caller must not make the
// server post to an address of its choosing.
type pushConfigs struct {
	push.ConfigStore
	allowed []string
}

func (p *pushConfigs) Save(ctx context.Context, id a2a.TaskID, c *a2a.PushConfig) (*a2a.PushConfig, error) {
	if c == nil {
		return nil, invalid("a2a: no push config")
	}
	for _, a := range p.allowed {
		if strings.HasPrefix(c.URL, a) {
			return p.ConfigStore.Save(ctx, id, c)
		}
	}
	return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("a2a: push notifications go only to the destinations this server is configured with (%s); %.120q is not one", strings.Join(p.allowed, ", "), c.URL))
}
