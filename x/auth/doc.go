// Package auth decides who a caller is, once, for every door of lode: the
// Identity (user, tenant, roles) that x/policy decides by and that a door
// writes on the threads it serves (Identity.Metadata).
//
// An Identity comes from authentication only: a bearer token, the page's
// session cookie, or an authenticating proxy's header from a configured
// address. A request body or a model never names one.
//
// # Authenticators
//
// Tokens are static bearer tokens, each granting an Identity; a token
// that names no user is named by TokenUser, a hash prefix that does not
// reveal it. Every known token is compared in constant time.
//
// Sessions trade a token for a cookie, as a login page does (Login), and
// authenticate by it. The cookie is HttpOnly, SameSite=Strict, Path=/,
// Secure over TLS (always with WithSecureCookie), and expires after
// DefaultSessionTTL (WithSessionTTL). It holds a random session ID and the
// expiry, signed with HMAC-SHA256.
//
// Proxy trusts an authenticating proxy's headers (X-Forwarded-User,
// X-Forwarded-Email, X-Forwarded-Groups by default) only from the
// proxy's addresses, by the request's TCP peer (RemoteAddr) and never by
// X-Forwarded-For; users and groups map to roles and a tenant.
//
// Chain asks several in order: lode's doors chain tokens, the session
// cookie and the proxy, and refuse a request none of them authenticates
// (ErrUnauthenticated).
//
// # Choices this package makes
//
//   - The key that signs a session is derived from the token it was traded
//     for (HMAC-SHA256 of the token), optionally mixed with WithSessionKey.
//     So replicas given the same tokens agree with no key to share, a
//     cookie stops working once its token is removed from the
//     configuration, changing one token ends only that token's sessions,
//     and a new session key ends them all.
//   - A logout is kept as a shared counter of the ledger store
//     (WithRevocations, one counter named RevokedCounterPrefix + the
//     session ID), so a cookie replayed after its logout fails on every
//     process sharing the store; every request with a cookie reads that
//     counter. Without a store the logout holds in its own process only.
//   - The session cookie carries neither the token nor the user: the
//     Identity comes from the token's grant as configured now, so a
//     changed grant applies to running sessions.
//   - A proxy user known to no Users or Groups entry is authenticated with
//     no roles and no tenant; one whose groups name two tenants is refused.
package auth
