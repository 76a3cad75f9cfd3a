package main

import (
	"flag"
	"fmt"
	"net/http"

	"github.com/lodeworks/lode/x/cassette"
)

// replayKey stands in for an API key on replay: no request leaves the
// process, and the cassette holds no key to compare it with.
const replayKey = "lode-replay"

// cassetteFlags are lode run's --record and --replay.
type cassetteFlags struct{ record, replay string }

func (c *cassetteFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.record, "record", "", "record the session's HTTP traffic with the model and remote MCP servers into this cassette file (API keys and cookies scrubbed)")
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
