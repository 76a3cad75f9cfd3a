package cassette_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/lodeworks/lode/x/cassette"
)

// A key in a query string, and echoed back by the server in its error,
// leaves the file as Redacted; so does a secret handed in with
// WithSecrets, wherever it appears.
func ExampleWithSecrets() {
	dir, _ := os.MkdirTemp("", "cassette")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.yaml")
	echo := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body := `{"error":"key ` + r.URL.Query().Get("key") + ` is not valid for org-hunter2-77"}`
		return &http.Response{StatusCode: 401, Status: "401 Unauthorized", Header: http.Header{},
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
	})
	rec, err := cassette.New(path, cassette.WithMode(cassette.Record), cassette.WithTransport(echo),
		cassette.WithSecrets("org-hunter2-77"))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := rec.Client().Get("http://model.test/v1/models?key=AIza-example-key")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	if err := rec.Stop(); err != nil {
		fmt.Println(err)
		return
	}
	data, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "url:") || strings.Contains(line, "body:") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// url: http://model.test/v1/models?key=REDACTED
	// body: '{"error":"key REDACTED is not valid for REDACTED"}'
}
