package cli

import (
	"fmt"
	"net"
	"net/url"

	"github.com/lodeworks/lode/x/cassette"
)

// Warnings are one line on stderr each, "lode: warning: ...", for a
// configuration that works but is likely not what was meant; the command
// goes on.

// warnKey warns when the model's key variable is not set: always when
// api_key_env names it, and for the provider's default variable when the
// server is not on this machine (a local server often needs no key; for
// OpenAI's own, no key is an error already). A replayed run needs no key.
func warnKey(e env, m ModelConfig) {
	if m.APIKeyEnv == "" || e.getenv(m.APIKeyEnv) != "" {
		return
	}
	if e.cassette != nil && e.cassette.Mode() == cassette.Replay {
		return
	}
	where := m.BaseURL
	if where == "" {
		where = "the provider's default endpoint"
	}
	if !m.keyEnvDefault {
		fmt.Fprintf(e.stderr, "lode: warning: model.api_key_env names %s, which is not set: requests to %s go out with no key\n", m.APIKeyEnv, where)
		return
	}
	if m.BaseURL == "" || m.Provider == providerGemini || localURL(m.BaseURL) {
		return
	}
	fmt.Fprintf(e.stderr, "lode: warning: %s is not set: requests to %s go out with no key (set it, or name the key's variable in model.api_key_env)\n", m.APIKeyEnv, where)
}

// localURL says whether u names a server on this machine.
func localURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	host := p.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// noRoleWarning is what lode run, chat and resume say with a policy and
// no --role: the policy grants a caller without roles nothing.
const noRoleWarning = "lode: warning: lode.yaml has a policy and no --role was given, so the model is offered no tools: give the caller's roles with --role R (lode policy explain --role R says what R may use)"
