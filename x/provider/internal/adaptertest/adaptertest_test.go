package adaptertest

import (
	"context"
	"errors"
	"io"
	"iter"
	"net/http"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

// seq is a provider that yields its artifacts, then its error if any.
type seq struct {
	arts []artifact.Artifact
	err  error
}

func (s seq) Invoke(context.Context, *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		for _, a := range s.arts {
			if !yield(a, nil) {
				return
			}
		}
		if s.err != nil {
			yield(nil, s.err)
		}
	}
}

func TestCollect(t *testing.T) {
	boom := errors.New("boom")
	p := seq{arts: []artifact.Artifact{artifact.TextDelta{Content: "h"}, artifact.Text{Content: "hi"}, artifact.Finish{Reason: "stop"}}, err: boom}
	deltas, arts, err := Collect(t.Context(), p, &provider.Request{})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if want := []artifact.Artifact{artifact.TextDelta{Content: "h"}}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %#v", deltas)
	}
	if want := []artifact.Artifact{artifact.Text{Content: "hi"}, artifact.Finish{Reason: "stop"}}; !reflect.DeepEqual(arts, want) {
		t.Errorf("arts = %#v", arts)
	}
}

func TestRecorderAttrs(t *testing.T) {
	sr, tr := Recorder()
	_, sp := tr.Start(t.Context(), "chat m")
	sp.SetAttributes(attribute.String("gen_ai.request.model", "m"), attribute.Int("server.port", 443))
	sp.End()
	spans := sr.Ended()
	if len(spans) != 1 || spans[0].Name() != "chat m" {
		t.Fatalf("spans = %v", spans)
	}
	want := map[attribute.Key]attribute.Value{
		"gen_ai.request.model": attribute.StringValue("m"),
		"server.port":          attribute.IntValue(443),
	}
	if got := Attrs(spans[0]); !reflect.DeepEqual(got, want) {
		t.Errorf("Attrs = %v", got)
	}
}

func TestStreamClient(t *testing.T) {
	var read bool
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://in.memory/v1/responses", readFlag{&read})
	resp, err := StreamClient([]byte("data: {}\n\n")).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || string(body) != "data: {}\n\n" || !read {
		t.Fatalf("status %d, type %q, body %q, request read %v", resp.StatusCode, resp.Header.Get("Content-Type"), body, read)
	}
}

// readFlag is a request body that notes it was read to the end.
type readFlag struct{ read *bool }

func (r readFlag) Read([]byte) (int, error) { *r.read = true; return 0, io.EOF }
