package provider_test

import (
	"context"
	"testing"

	"github.com/lodeworks/lode/provider"
)

type named string

func (n named) EventName() string { return string(n) }

func TestNotify(t *testing.T) {
	var got []string
	post := func(_ context.Context, ev provider.Event) bool {
		got = append(got, ev.EventName())
		return true
	}
	gone := func(context.Context, provider.Event) bool { return false }
	cases := []struct {
		name      string
		ctx       context.Context
		ev        provider.Event
		listening bool
		posted    bool
		want      []string
	}{
		{"no listener", context.Background(), named("a"), false, false, nil},
		{"a listener", provider.WithNotify(context.Background(), post), named("a"), true, true, []string{"a"}},
		{"a nil event", provider.WithNotify(context.Background(), post), nil, true, false, nil},
		{"a nil listener", provider.WithNotify(context.Background(), nil), named("a"), false, false, nil},
		{"a listener that is gone", provider.WithNotify(context.Background(), gone), named("a"), true, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got = nil
			if l := provider.Listening(c.ctx); l != c.listening {
				t.Errorf("Listening = %v, want %v", l, c.listening)
			}
			if p := provider.Notify(c.ctx, c.ev); p != c.posted {
				t.Errorf("Notify = %v, want %v", p, c.posted)
			}
			if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
				t.Errorf("posted %v, want %v", got, c.want)
			}
		})
	}
}
