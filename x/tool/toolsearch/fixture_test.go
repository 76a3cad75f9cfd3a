package toolsearch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/internal/pgtest"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/pack"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Words the generated tools are described with: each tool gets a verb and
// an object of its own combination, so that only one tool matches a
// query naming both.
var (
	verbs   = []string{"list", "create", "update", "archive", "export", "import", "merge", "tag", "score", "sync"}
	objects = []string{"contacts", "deals", "tickets", "projects", "meetings", "documents", "orders", "shipments", "vendors", "budgets",
		"campaigns", "leads", "assets", "licenses", "repositories", "builds", "alerts", "dashboards", "reports", "surveys",
		"invoices", "payments", "refunds", "subscriptions", "coupons", "warehouses", "employees", "timesheets", "expenses", "contracts",
		"accounts", "regions", "teams", "roles", "devices", "sensors", "firmware", "backups", "domains", "certificates",
		"mailboxes", "calendars", "rooms", "events", "webinars", "articles", "comments", "reviews", "playlists", "podcasts",
		"recipes", "menus", "tables", "reservations", "flights", "hotels", "cars", "routes", "parcels", "drivers",
		"patients", "appointments", "prescriptions", "claims", "policies", "quotes", "brokers", "portfolios", "trades", "bonds",
		"courses", "lessons", "students", "grades", "exams", "badges", "forums", "threads", "polls", "channels",
		"issues", "sprints", "epics", "milestones", "releases", "branches", "pipelines", "clusters", "nodes", "volumes",
		"secrets", "keys", "tokens", "sessions", "audits", "logs", "metrics", "traces", "spans", "profiles"}
)

// generated is the description of the i-th generated tool.
func generated(i int) (name, description string) {
	v, o := verbs[i%len(verbs)], objects[i/len(verbs)%len(objects)]
	return fmt.Sprintf("op_%04d", i), fmt.Sprintf("%s the %s of the workspace (batch %d)", v, o, i)
}

// The tools the tests look for by what their descriptions say.
const (
	invoiceTool = "crm__send_invoice"
	deleteTool  = "crm__delete_customer"
)

// crmServer is an MCP server (the go-sdk's, in process) with n generated
// tools and two written ones.
func crmServer(t testing.TB, n int) *mcp.Client {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "crm", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)
	reply := func(text string) sdk.ToolHandler {
		return func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
		}
	}
	for i := range n {
		name, desc := generated(i)
		s.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: schema}, reply(name+" done"))
	}
	s.AddTool(&sdk.Tool{Name: "send_invoice", Description: "Email an invoice as a PDF to a customer's billing address.\nMore details follow here.", InputSchema: schema},
		reply("invoice sent"))
	s.AddTool(&sdk.Tool{Name: "delete_customer", Description: "Delete a customer and every record of them, for good.", InputSchema: schema},
		reply("customer deleted"))
	c, err := mcp.NewClient(mcp.WithName("crm"), mcp.WithTransport(func(ctx context.Context) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := s.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

type noteIn struct {
	Text string `json:"text"`
}

// notesPack is a pack mounted flat under its own prefix, as lode's packs are.
func notesPack(t testing.TB) *pack.Bundle {
	t.Helper()
	b, err := pack.New("notes",
		pack.Tool("notes_add", "Add a note to the user's notebook.", func(_ context.Context, in noteIn) (string, error) { return "added: " + in.Text, nil }),
		pack.Tool("notes_find", "Find notes in the user's notebook by words they contain.", func(_ context.Context, in noteIn) (string, error) { return "found", nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mounted is a registry with a core tool, the crm server (n generated
// tools and two more) and the notes pack.
func mounted(t testing.TB, n int) toolpkg.Registry {
	t.Helper()
	reg := toolpkg.NewRegistry(toolpkg.WithMCPServer(crmServer(t, n)), toolpkg.WithSource(notesPack(t), toolpkg.Flat()))
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	if err := toolpkg.RegisterFunc(reg, "clock", "Tell the time.", func(context.Context, struct{}) (string, error) { return "noon", nil }); err != nil {
		t.Fatal(err)
	}
	return reg
}
