package toolsearch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// refundTools are ten tools of one family, whose names share every word
// a vague query has; only the descriptions tell them apart.
var refundTools = [][2]string{
	{"invoice_refund_approve", "Approve a refund request waiting for a manager."},
	{"invoice_refund_cancel", "Cancel a pending refund before it is paid out."},
	{"invoice_refund_create", "Refund an invoice, in full or in part, returning the money to the customer."},
	{"invoice_refund_estimate", "Estimate what a refund of an invoice would return."},
	{"invoice_refund_export", "Export refunds as CSV for the accountants."},
	{"invoice_refund_get", "Get one refund of an invoice by its ID."},
	{"invoice_refund_list", "List the refunds issued for an invoice."},
	{"invoice_refund_notify", "Notify the customer that a refund was issued."},
	{"invoice_refund_policy", "Read the refund policy that applies to an invoice."},
	{"invoice_refund_reject", "Reject a refund request."},
}

func refundRegistry(t *testing.T) toolpkg.Registry {
	t.Helper()
	reg := toolpkg.NewRegistry()
	nop := func(context.Context, toolpkg.Sandbox, map[string]any) (any, error) { return "ok", nil }
	for _, rt := range refundTools {
		if err := reg.Register(toolpkg.Tool{Name: rt[0], Description: rt[1], Schema: []byte(`{"type":"object"}`)}, nop); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 {
		if err := reg.Register(toolpkg.Tool{Name: fmt.Sprintf("crm_contact_%d", i), Description: "Find a contact by email.", Schema: []byte(`{"type":"object"}`)}, nop); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// TestVagueQueryFindsTheRightTool: over a family of ten tools that share
// the query's words, the tool whose description says what was asked
// ranks first; a tool the limit leaves out is named among the close
// matches, so the model can still find it.
func TestVagueQueryFindsTheRightTool(t *testing.T) {
	reg := refundRegistry(t)
	s, err := toolsearch.New(reg, toolsearch.DeferFunc(func(*toolpkg.Binding) bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"refund an invoice", "refund invoice", "Refund the invoice"} {
		ms := s.Query(context.Background(), ledger.NewThread(), q, 0)
		if len(ms) != toolsearch.DefaultLimit || ms[0].Name != "invoice_refund_create" {
			t.Errorf("%q: matches %v, want invoice_refund_create first", q, ms)
		}
	}
	// A plural in a description counts the query word once, not twice.
	ms := s.Query(context.Background(), ledger.NewThread(), "refund", 10)
	for i, m := range ms {
		if m.Name == "invoice_refund_list" && i < 1 {
			t.Errorf("refund: list ranks %d: %v", i, ms)
		}
	}
	res := call(t, reg, s, ledger.NewThread(), artifact.ToolCall{ID: "s1", Name: toolsearch.DefaultName, Arguments: `{"query":"issue a refund for an invoice","limit":3}`})
	shown, also, ok := strings.Cut(res.Content, "\nClose matches not loaded: ")
	if res.IsError || !ok || !strings.Contains(also, "invoice_refund_create") || strings.Count(shown, "\n- ") != 3 ||
		!strings.HasSuffix(res.Content, ". If one of them is what you need, search for it by its name.") {
		t.Fatalf("search answered:\n%s", res.Content)
	}
	// The close matches are named only: the model loads one by searching
	// for its name.
	res = call(t, reg, s, ledger.NewThread(), artifact.ToolCall{ID: "s2", Name: toolsearch.DefaultName, Arguments: `{"query":"invoice_refund_create","limit":1}`})
	if !strings.Contains(res.Content, "- invoice_refund_create: Refund an invoice") {
		t.Fatalf("search by name answered:\n%s", res.Content)
	}
}
