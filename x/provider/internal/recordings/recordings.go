package recordings

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Dir fetches module at version with go mod download and returns the
// folder it was unpacked into, or skips or fails t as the package doc says.
// what names the recordings in the skip message.
func Dir(t testing.TB, module, version, what string) string {
	t.Helper()
	if os.Getenv("LODE_TEST_REPLAY") == "off" {
		t.Skip("LODE_TEST_REPLAY=off: skipping the replays of " + what)
	}
	dir, err := download(module, version)
	if err != nil {
		msg := "cannot fetch the recordings (go mod download " + module + "@" + version + "): " +
			err.Error() + "; set LODE_TEST_REPLAY=off to skip"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

func download(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return parseDownload(out, stderr.String(), err)
}

// parseDownload reads go mod download -json's answer. A failed download
// still writes its JSON, with the reason in Error.
func parseDownload(out []byte, stderr string, runErr error) (string, error) {
	var info struct{ Dir, Error string }
	jerr := json.Unmarshal(out, &info)
	switch {
	case info.Error != "":
		return "", &downloadError{detail: info.Error}
	case runErr != nil:
		return "", &downloadError{err: runErr, detail: stderr}
	case jerr != nil:
		return "", &downloadError{err: jerr, detail: string(out)}
	case info.Dir == "":
		return "", &downloadError{detail: "no folder in " + strings.TrimSpace(string(out))}
	}
	return info.Dir, nil
}

type downloadError struct {
	err    error
	detail string
}

func (e *downloadError) Error() string {
	d := strings.TrimSpace(e.detail)
	switch {
	case e.err == nil:
		return d
	case d == "":
		return e.err.Error()
	}
	return d + ": " + e.err.Error()
}

// Cassette is the part of a go-vcr cassette a replay needs.
type Cassette struct {
	Interactions []Interaction `yaml:"interactions"`
}

// Interaction is one recorded request and the response it got.
type Interaction struct {
	Request struct {
		Body   string `yaml:"body"`
		URL    string `yaml:"url"`
		Method string `yaml:"method"`
	} `yaml:"request"`
	Response struct {
		Body    string              `yaml:"body"`
		Headers map[string][]string `yaml:"headers"`
		Code    int                 `yaml:"code"`
	} `yaml:"response"`
}

// Load reads the cassette at path, failing t if it cannot be read or holds
// no interaction.
func Load(t testing.TB, path string) *Cassette {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c Cassette
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(c.Interactions) == 0 {
		t.Fatalf("%s has no interactions", path)
	}
	return &c
}
