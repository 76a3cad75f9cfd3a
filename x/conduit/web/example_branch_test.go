package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// An edited message is answered on a new branch of the conversation; the
// earlier answer stays on the branch left, which a switch shows again.
// The conversation's thread names the branch shown under BranchKey.
func Example_branches() {
	dir, _ := os.MkdirTemp("", "webbranches")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()
	h, _ := web.New(script.Play(script.Text("Paris."), script.Text("Rome.")), store)
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(path, body string) []byte {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	post("/api/chat", `{"id":"trip","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"Capital of France?"}]}]}`)
	// The AI SDK's sendMessage({text, messageId}) in place of the first message.
	post("/api/chat", `{"id":"trip","trigger":"submit-message","messageId":"turn-0","messages":[{"id":"turn-0","role":"user","parts":[{"type":"text","text":"Capital of Italy?"}]}]}`)

	var view struct {
		Branch   string `json:"branch"`
		Messages []struct {
			Parts    []struct{ Text string } `json:"parts"`
			Metadata struct {
				Branch struct {
					Index, Count int
					Branches     []string
				} `json:"branch"`
			} `json:"metadata"`
		} `json:"messages"`
	}
	show := func(b []byte) {
		_ = json.Unmarshal(b, &view)
		first, answer := view.Messages[0], view.Messages[1]
		fmt.Printf("%s %s (%d/%d)\n", first.Parts[0].Text, answer.Parts[len(answer.Parts)-1].Text, first.Metadata.Branch.Index, first.Metadata.Branch.Count)
	}
	resp, _ := srv.Client().Get(srv.URL + "/api/threads/trip")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	show(b)
	st, _ := store.Load(context.Background(), "trip")
	shown, _ := st.Metadata(web.BranchKey)
	st.Close()
	fmt.Println("the conversation shows its branch:", shown == view.Branch)

	// The first version's branch is the conversation's own thread.
	show(post("/api/threads/trip/branch", fmt.Sprintf(`{"branch":%q}`, view.Messages[0].Metadata.Branch.Branches[0])))
	// Output:
	// Capital of Italy? Rome. (2/2)
	// the conversation shows its branch: true
	// Capital of France? Paris. (1/2)
}
