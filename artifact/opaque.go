package artifact

// KindOpaque is the kind of Opaque.
const KindOpaque = "opaque"

// Opaque is content a model's server sent that only the adapter which read
// it understands, kept so that this adapter can send it back as it came:
// Claude's server-side tool blocks (a web search and its results, code it
// ran), the citations of a text, the Responses API's tool search items. Provider names the adapter ("anthropic"),
// Type says what Data is in that adapter's terms, and Data is the content
// exactly as the server sent it, kept as text so that storage keeps it
// byte for byte. Every other adapter leaves it out of its requests, and the
// loop and handlers pass it by.
type Opaque struct {
	Provider string `json:"provider"`
	Type     string `json:"type"`
	Data     string `json:"data"`
}

// Kind returns "opaque".
func (Opaque) Kind() string { return KindOpaque }
