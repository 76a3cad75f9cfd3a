package cassette

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"

	"go.yaml.in/yaml/v4"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
)

// load reads the cassette at path and checks what replay relies on, so
// that a damaged file fails here, naming itself, rather than mid-test.
func load(path string) (*vcr.Cassette, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist: record it with %s=1 (or lode run --record)", ErrNotFound, path, EnvRecord)
	}
	c, err := vcr.LoadWithFS(path, fileFS{path: path})
	if err == nil {
		// go-vcr takes a file without a version, even an empty one, as
		// the current version.
		var head struct {
			Version *int `yaml:"version"`
		}
		data, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, corrupt(path, rerr)
		}
		if yerr := yaml.Unmarshal(data, &head); yerr != nil || head.Version == nil {
			err = vcr.ErrUnsupportedCassetteFormat
		}
	}
	switch {
	case errors.Is(err, vcr.ErrUnsupportedCassetteFormat):
		return nil, corrupt(path, fmt.Errorf("not a go-vcr cassette of format version %d (is \"version: %d\" missing?)", vcr.CassetteFormatVersion, vcr.CassetteFormatVersion))
	case err != nil:
		return nil, corrupt(path, err)
	}
	for _, it := range c.Interactions {
		if it == nil {
			return nil, corrupt(path, errors.New("an empty interaction"))
		}
		if it.Request.Method == "" {
			return nil, corrupt(path, fmt.Errorf("interaction %d has no request method", it.ID))
		}
		u, err := url.Parse(it.Request.URL)
		if err != nil || !u.IsAbs() {
			return nil, corrupt(path, fmt.Errorf("interaction %d has no absolute request URL (%q)", it.ID, it.Request.URL))
		}
		if it.Response.Code < 100 || it.Response.Code > 599 {
			return nil, corrupt(path, fmt.Errorf("interaction %d has response code %d", it.ID, it.Response.Code))
		}
	}
	return c, nil
}

func corrupt(path string, err error) error {
	return fmt.Errorf("%w: %s: %w: record it again with %s=1", ErrCorrupt, path, err, EnvRecord)
}
