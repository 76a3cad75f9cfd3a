package partconv

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/lodeworks/lode/artifact"
)

// ResourceText is a text resource as the model reads it: its URI, then its
// text.
func ResourceText(r artifact.Resource) string {
	if r.URI == "" {
		return r.Text
	}
	return "[resource " + r.URI + "]\n" + r.Text
}

// LinkText is a resource link as the model reads it: its URI, its title
// (else its name) and its description.
func LinkText(l artifact.ResourceLink) string {
	s := "[resource link " + l.URI
	if name := cmp.Or(l.Title, l.Name); name != "" {
		s += " (" + name + ")"
	}
	if l.Description != "" {
		s += ": " + l.Description
	}
	return s + "]"
}

// OrUnknown is a MIME type for a note, saying so when it is not known.
func OrUnknown(mime string) string {
	if mime == "" {
		return "of unknown type"
	}
	return mime
}

// ImageURL gives an image's URL, or its data as a data: URL. A URL wins
// over data when both are set: it is what the application chose to share.
// Data whose type is given or sniffed as anything but image/* is refused.
func ImageURL(img artifact.Image) (string, error) {
	if img.URL != "" {
		return img.URL, nil
	}
	if len(img.Data) == 0 {
		return "", fmt.Errorf("image has neither URL nor data")
	}
	mime := img.MIMEType
	if mime == "" {
		mime = http.DetectContentType(img.Data)
	}
	if !strings.HasPrefix(mime, "image/") {
		return "", fmt.Errorf("image data is %q, not an image type", mime)
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(img.Data), nil
}
