package cli

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/lodeworks/lode/x/cassette"
)

// replayKey stands in for an API key on replay: no request leaves the
// process, and the cassette holds no key to compare it with.
const replayKey = "lode-replay"

// cassetteFlags are lode run's --record and --replay.
type cassetteFlags struct{ record, replay string }

func (c *cassetteFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.record, "record", "", "record the session's HTTP traffic with the model and remote MCP servers into this cassette file (keys, tokens and passwords replaced by REDACTED wherever they appear)")
	fs.StringVar(&c.replay, "replay", "", "replay a cassette written by --record: no request reaches any server, and a request it does not hold fails naming the difference")
}

// start opens the recorder the flags ask for; nil when they ask for none.
func (c *cassetteFlags) start() (*cassette.Recorder, error) {
	switch {
	case c.record != "" && c.replay != "":
		return nil, usageError{"--record and --replay exclude each other: record a cassette once, then replay it"}
	case c.record != "":
		return cassette.New(c.record, cassette.WithMode(cassette.Record))
	case c.replay != "":
		return cassette.New(c.replay)
	}
	return nil, nil
}

// stopCassette writes a recording and says so; err is the run's own error,
// which comes first.
func stopCassette(rec *cassette.Recorder, e env, err error) error {
	stopErr := rec.Stop()
	if err != nil {
		if miss := replayMiss(err); miss != nil {
			// A miss outside a model turn (mounting an MCP server).
			return miss
		}
		return err
	}
	if stopErr != nil {
		return stopErr
	}
	if rec.Mode() == cassette.Record {
		fmt.Fprintf(e.stderr, "(session recorded in %s)\n", rec.Path())
	}
	return nil
}

// cassetteClient is the HTTP client of a session with a cassette, and the
// key to send: a replay needs none.
func cassetteClient(e env, key string) (*http.Client, string) {
	if e.cassette == nil {
		return nil, key
	}
	if key == "" && e.cassette.Mode() == cassette.Replay {
		key = replayKey
	}
	return e.cassette.Client(), key
}

// useCassette sends the MCP servers' traffic through the session's
// cassette and hands it every secret lode.yaml configures, so that none
// reaches the file even where the traffic only echoes it.
func useCassette(e env, cfg *Config) {
	for i := range cfg.MCP {
		cfg.MCP[i].httpc = e.cassette.Client()
	}
	useCassetteA2A(e, cfg)
	e.cassette.AddSecrets(configSecrets(e, cfg)...)
}

// configSecrets are the secrets a configuration names: the model's key,
// each MCP server's header values (and a scheme's credentials), its URL's
// password and key-like query values, its OAuth client secret, and the
// tokens that grant roles. Unreadable ones are skipped: the commands that
// use them say what is wrong.
func configSecrets(e env, cfg *Config) []string {
	var out []string
	if k := e.getenv(cfg.Model.APIKeyEnv); k != "" {
		out = append(out, k)
	}
	for _, m := range cfg.Model.Fallback {
		if k := e.getenv(m.APIKeyEnv); k != "" {
			out = append(out, k)
		}
	}
	for _, s := range cfg.MCP {
		for _, v := range s.Headers {
			out = append(out, v)
			if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				out = append(out, strings.TrimSpace(cred))
			}
		}
		if u, err := url.Parse(s.URL); err == nil {
			if pass, ok := u.User.Password(); ok {
				out = append(out, pass)
			}
			for k, vs := range u.Query() {
				if cassette.CredentialName(k) {
					out = append(out, vs...)
				}
			}
		}
		switch o := s.OAuth; {
		case o.ClientSecretEnv != "":
			out = append(out, e.getenv(o.ClientSecretEnv))
		case o.ClientSecretFile != "":
			out = append(out, readSecret(o.ClientSecretFile))
		}
	}
	for _, tc := range cfg.Tokens {
		switch {
		case tc.Env != "":
			out = append(out, e.getenv(tc.Env))
		case tc.File != "":
			path := tc.File
			if !filepath.IsAbs(path) && cfg.file != nil {
				path = filepath.Join(filepath.Dir(cfg.file.name), path)
			}
			out = append(out, readSecret(path))
		}
	}
	return out
}

func readSecret(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// replayMiss words a replay that differs from its recording for a user of
// lode run, who records with --record rather than the tests' variable;
// nil when err is no miss.
func replayMiss(err error) error {
	var miss *cassette.MissError
	if !errors.As(err, &miss) {
		return nil
	}
	return fmt.Errorf("%s; if the change is meant, record the session again with lode run --record %s", miss.Detail(), miss.Path)
}
