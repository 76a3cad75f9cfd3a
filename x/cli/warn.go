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
	// Without a base URL the provider's own endpoint needs the key, and
	// its absence is an error already; a URL that is not http(s) is one
	// too.
	local, ok := httpURL(m.BaseURL)
	if !ok {
		return
	}
	if !m.keyEnvDefault {
		fmt.Fprintf(e.stderr, "lode: warning: model.api_key_env names %s, which is not set: requests to %s go out with no key\n", m.APIKeyEnv, m.BaseURL)
		return
	}
	if local || m.Provider == providerGemini {
		return
	}
	fmt.Fprintf(e.stderr, "lode: warning: %s is not set: requests to %s go out with no key (set it, or name the key's variable in model.api_key_env)\n", m.APIKeyEnv, m.BaseURL)
}

// httpURL says whether u is an http(s) URL, and whether it names a
// server on this machine.
func httpURL(u string) (local, ok bool) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return false, false
	}
	host := p.Hostname()
	if host == "localhost" {
		return true, true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), true
}

// noRoleWarning is what a door says with a policy, no --role and no
// logins that would name each caller's roles (lode run, chat and resume;
// lode serve): the policy grants a caller without roles nothing. who is
// the one offered no tools.
func noRoleWarning(who string) string {
	return "lode: warning: lode.yaml has a policy and no --role was given, so " + who + " no tools: give the caller's roles with --role R (lode policy explain --role R says what R may use)"
}

// Who a door without roles offers nothing, for noRoleWarning.
const (
	noRoleModel   = "the model is offered"
	noRoleClients = "MCP clients are offered"
)
