package anthropic

import (
	"encoding/json"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// opaqueContainer is the Type of the artifact.Opaque that keeps the
// container an answer reports (the code execution tool's sandbox), Data
// the container object as the server sent it. It is no content block: it
// names the container of the next request and is never sent as a block.
const opaqueContainer = "container"

// errContainerShape says what a container object must be.
const errContainerShape = "is not an object with a string id and an RFC 3339 expires_at"

// reported reports whether raw, a field's JSON as the SDK kept it, holds a
// value: a container that is omitted or null is none.
func reported(raw string) bool {
	raw = strings.TrimSpace(raw)
	return raw != "" && raw != "null"
}

// readContainer reads a container object as the API describes it: its id
// and when it expires. ok is false for anything else.
func readContainer(raw string) (id string, expires time.Time, ok bool) {
	s := strings.TrimSpace(raw)
	if !strings.HasPrefix(s, "{") {
		return "", time.Time{}, false
	}
	var c struct {
		ID        *string `json:"id"`
		ExpiresAt *string `json:"expires_at"`
	}
	if err := json.Unmarshal([]byte(s), &c); err != nil || c.ID == nil || *c.ID == "" || c.ExpiresAt == nil {
		return "", time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, *c.ExpiresAt)
	if err != nil {
		return "", time.Time{}, false
	}
	return *c.ID, at, true
}

// containerOpaque keeps the container an answer reported.
func containerOpaque(raw string) (artifact.Opaque, error) {
	if _, _, ok := readContainer(raw); !ok {
		return artifact.Opaque{}, respErr(ErrMalformed, "the answer's container "+errContainerShape, []byte(raw), nil)
	}
	return artifact.Opaque{Provider: opaqueProvider, Type: opaqueContainer, Data: raw}, nil
}

// requestContainer is the container a request names: the one reported by
// the newest answer that reported one, unless it has expired by now. An
// expired one is not replaced by an older report, which is no fresher.
func requestContainer(turns []ledger.Turn, now time.Time) (sdk.MessageCreateParamsContainerUnion, error) {
	var none sdk.MessageCreateParamsContainerUnion
	for i := len(turns) - 1; i >= 0; i-- {
		t := turns[i]
		if t.Role != ledger.RoleAssistant {
			continue
		}
		for j := len(t.Artifacts) - 1; j >= 0; j-- {
			o, ok := artifact.Normalize(t.Artifacts[j]).(artifact.Opaque)
			if !ok || o.Provider != opaqueProvider || o.Type != opaqueContainer {
				continue
			}
			id, at, ok := readContainer(o.Data)
			if !ok {
				return none, turnErr(i, t.Role, "the kept container %s", errContainerShape)
			}
			if !now.Before(at) {
				return none, nil
			}
			return sdk.MessageCreateParamsContainerUnion{OfString: sdk.String(id)}, nil
		}
	}
	return none, nil
}
