package partconv

import (
	"testing"

	"github.com/lodeworks/lode/artifact"
)

func TestResourceText(t *testing.T) {
	cases := []struct {
		r    artifact.Resource
		want string
	}{
		{artifact.Resource{Text: "body"}, "body"},
		{artifact.Resource{URI: "file:///a.txt", Text: "body"}, "[resource file:///a.txt]\nbody"},
		{artifact.Resource{URI: "file:///a.txt"}, "[resource file:///a.txt]\n"},
	}
	for _, c := range cases {
		if got := ResourceText(c.r); got != c.want {
			t.Errorf("ResourceText(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}

func TestLinkText(t *testing.T) {
	cases := []struct {
		l    artifact.ResourceLink
		want string
	}{
		{artifact.ResourceLink{URI: "u"}, "[resource link u]"},
		{artifact.ResourceLink{URI: "u", Name: "n"}, "[resource link u (n)]"},
		{artifact.ResourceLink{URI: "u", Name: "n", Title: "T"}, "[resource link u (T)]"},
		{artifact.ResourceLink{URI: "u", Description: "d"}, "[resource link u: d]"},
		{artifact.ResourceLink{URI: "u", Title: "T", Description: "d"}, "[resource link u (T): d]"},
	}
	for _, c := range cases {
		if got := LinkText(c.l); got != c.want {
			t.Errorf("LinkText(%+v) = %q, want %q", c.l, got, c.want)
		}
	}
}

func TestOrUnknown(t *testing.T) {
	if got := OrUnknown(""); got != "of unknown type" {
		t.Errorf("OrUnknown(\"\") = %q", got)
	}
	if got := OrUnknown("audio/wav"); got != "audio/wav" {
		t.Errorf("OrUnknown(audio/wav) = %q", got)
	}
}

func TestImageURL(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	cases := []struct {
		name    string
		img     artifact.Image
		want    string
		wantErr string
	}{
		{"url wins over data", artifact.Image{URL: "https://x/a.png", Data: png}, "https://x/a.png", ""},
		{"given type", artifact.Image{MIMEType: "image/webp", Data: []byte("ab")}, "data:image/webp;base64,YWI=", ""},
		{"sniffed type", artifact.Image{Data: png}, "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==", ""},
		{"empty", artifact.Image{}, "", "image has neither URL nor data"},
		{"not an image", artifact.Image{Data: []byte("plain words")}, "", `image data is "text/plain; charset=utf-8", not an image type`},
		{"declared non-image", artifact.Image{MIMEType: "application/pdf", Data: png}, "", `image data is "application/pdf", not an image type`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ImageURL(c.img)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ImageURL = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
