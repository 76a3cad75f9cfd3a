package auth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/lodeworks/lode/x/auth"
)

// A door's authenticator: a bearer token, the session cookie a login
// trades it for, and a proxy trusted from one address.
func ExampleChain() {
	tokens, err := auth.NewTokens(auth.Token{
		Secret:   "s3cret-token-for-alice",
		Identity: auth.Identity{User: "alice", Tenant: "acme", Roles: []string{"editor"}},
	})
	if err != nil {
		panic(err)
	}
	sessions, err := auth.NewSessions(tokens)
	if err != nil {
		panic(err)
	}
	proxy, err := auth.NewProxy(auth.ProxyConfig{
		Trusted: []string{"10.0.0.5"},
		Groups:  map[string]auth.Grant{"globex": {Tenant: "globex", Roles: []string{"viewer"}}},
	})
	if err != nil {
		panic(err)
	}
	door := auth.Chain(tokens, sessions, proxy)

	show := func(what string, r *http.Request) {
		id, err := door.Authenticate(r)
		if err != nil {
			fmt.Printf("%s: %v\n", what, err)
			return
		}
		fmt.Printf("%s: %+v\n", what, id)
	}

	r := httptest.NewRequest("GET", "/api/info", nil)
	r.Header.Set("Authorization", "Bearer s3cret-token-for-alice")
	show("token", r)

	w := httptest.NewRecorder()
	if _, err := sessions.Login(w, httptest.NewRequest("POST", "/api/login", nil), "s3cret-token-for-alice"); err != nil {
		panic(err)
	}
	r = httptest.NewRequest("GET", "/api/info", nil)
	r.AddCookie(w.Result().Cookies()[0])
	show("cookie", r)

	r = httptest.NewRequest("GET", "/api/info", nil)
	r.RemoteAddr = "10.0.0.5:41000"
	r.Header.Set("X-Forwarded-User", "bob")
	r.Header.Set("X-Forwarded-Groups", "globex")
	show("proxy", r)

	r.RemoteAddr = "198.51.100.7:41000"
	show("the same headers from elsewhere", r)
	// Output:
	// token: {User:alice Tenant:acme Roles:[editor]}
	// cookie: {User:alice Tenant:acme Roles:[editor]}
	// proxy: {User:bob Tenant:globex Roles:[viewer]}
	// the same headers from elsewhere: auth: no valid credentials
}
