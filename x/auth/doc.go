// Package auth decides who a caller is, once, for every door of lode: the
// Identity (user, tenant, roles) that x/policy decides by and that a door
// writes on the threads it serves (Identity.Metadata).
//
// An Identity comes from authentication only: a bearer token, the page's
// session cookie, or an authenticating proxy's header from a configured
// address. A request body or a model never names one.
package auth
