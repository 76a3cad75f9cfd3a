package postgres_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/sqlstore/postgres"
)

// Two workers may write to one thread; one that was overtaken gets
// ErrConflict, reloads and decides again. (Needs a server, so it is not
// run as a test; TestContract runs the same against a real one.)
func Example() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, "postgres://lode@127.0.0.1:5432/lode?sslmode=disable")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	st, err := store.Load(ctx, "ticket-7")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = st.Append(ledger.RoleUser, artifact.Text{Content: "Any news?"})
	if errors.Is(err, ledger.ErrConflict) {
		if err := st.Reload(ctx); err != nil {
			fmt.Println(err)
			return
		}
		err = st.Append(ledger.RoleUser, artifact.Text{Content: "Any news?"})
	}
	fmt.Println(err)
}
