// Package source fetches the catalog's pinned npm packages, for the
// generator and for the test that checks the catalog against them.
package source

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Source is one pinned package, as models.json's sources name it.
type Source struct {
	Package   string `json:"package"`
	Version   string `json:"version"`
	License   string `json:"license"`
	Integrity string `json:"integrity"`
}

// Fetch packs name@version into dir with npm (from its cache, else the
// registry) and unpacks it, returning the package's integrity and license
// and the folder that holds its package.json. It refuses a package not
// licensed MIT.
func Fetch(dir, name, version string) (Source, string, error) {
	cmd := exec.Command("npm", "pack", "--json", "--pack-destination", dir, name+"@"+version)
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return Source{}, "", fmt.Errorf("npm pack %s@%s: %w", name, version, err)
	}
	var packed []struct {
		Filename  string `json:"filename"`
		Integrity string `json:"integrity"`
	}
	if err := json.Unmarshal(raw, &packed); err != nil || len(packed) != 1 {
		return Source{}, "", fmt.Errorf("npm pack %s: unexpected output %q", name, raw)
	}
	into := filepath.Join(dir, strings.NewReplacer("@", "", "/", "-").Replace(name))
	if err := untar(filepath.Join(dir, packed[0].Filename), into); err != nil {
		return Source{}, "", err
	}
	var meta struct {
		License string `json:"license"`
	}
	pj, err := os.ReadFile(filepath.Join(into, "package", "package.json"))
	if err == nil {
		err = json.Unmarshal(pj, &meta)
	}
	if err != nil {
		return Source{}, "", err
	}
	if meta.License != "MIT" {
		return Source{}, "", fmt.Errorf("%s@%s is licensed %q, not MIT: check it before use", name, version, meta.License)
	}
	return Source{name, version, meta.License, packed[0].Integrity}, filepath.Join(into, "package"), nil
}

func untar(file, into string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if h.Typeflag != tar.TypeReg || strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			continue
		}
		p := filepath.Join(into, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
}
