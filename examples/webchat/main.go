// Command webchat embeds lode's web handler in a plain net/http server: a
// chat page at /chat/, turns streamed in the AI SDK's UI message stream,
// threads in a file store, a typed tool, and callers told apart by a
// header (as a proxy in front would set it) whose role picks the tools.
//
//	OPENAI_API_KEY=... LODE_MODEL=gpt-4o-mini go run ./examples/webchat
//	OPENAI_BASE_URL=http://127.0.0.1:11434/v1 LODE_MODEL=llama3.1 go run ./examples/webchat
//
// then open http://127.0.0.1:8080/chat/.
package main

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/openai"
	xtool "github.com/lodeworks/lode/x/tool"
)

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// byRole offers the add tool to admins only.
func byRole(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
	if role, _ := st.Metadata(web.RoleKey); role == "admin" {
		return tools
	}
	return nil
}

// identify trusts the X-Forwarded-User header a proxy sets; without a
// proxy every caller is "local", an admin.
func identify(r *http.Request) (web.Identity, error) {
	if u := r.Header.Get("X-Forwarded-User"); u != "" {
		return web.Identity{Caller: u, Role: r.Header.Get("X-Forwarded-Role")}, nil
	}
	if r.Header.Get("Authorization") != "" {
		return web.Identity{}, errors.New("this server takes no tokens; put it behind a proxy that sets X-Forwarded-User")
	}
	return web.Identity{Caller: "local", Role: "admin"}, nil
}

func main() {
	prov, err := openai.New(openai.WithModel(os.Getenv("LODE_MODEL")))
	if err != nil {
		log.Fatal(err)
	}
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "add", "adds a and b", func(_ context.Context, in addArgs) (float64, error) {
		return in.A + in.B, nil
	}); err != nil {
		log.Fatal(err)
	}
	store, err := file.Open("webchat-threads")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	h, err := web.New(prov, store,
		web.WithIdentify(identify),
		web.WithLoopOptions(
			loop.WithHandlers(xtool.NewHandler(reg)),
			loop.WithInvokeOptions(xtool.WithFilteredTools(reg, byRole)),
			loop.WithMaxTurns(8),
		),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/chat/", http.StripPrefix("/chat", h))
	mux.Handle("/{$}", http.RedirectHandler("/chat/", http.StatusFound))
	log.Println("chat at http://127.0.0.1:8080/chat/")
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
