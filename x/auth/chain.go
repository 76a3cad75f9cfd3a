package auth

import (
	"errors"
	"net/http"
)

// Chain returns an Authenticator that asks each of as in order and takes
// the first Identity one finds: tokens, then the session cookie, then a
// trusted proxy's header, as lode's doors chain them. Nil entries are
// skipped. When none authenticates the request, the error is the first
// that does not match ErrUnauthenticated (an authenticator could not
// check, e.g. its store failed), else the first that says more than
// ErrUnauthenticated (an ended session says so), else ErrUnauthenticated:
// the request is refused either way.
func Chain(as ...Authenticator) Authenticator {
	var list []Authenticator
	for _, a := range as {
		if a != nil {
			list = append(list, a)
		}
	}
	return chain(list)
}

type chain []Authenticator

func (c chain) Authenticate(r *http.Request) (Identity, error) {
	var failed, refused error
	for _, a := range c {
		id, err := a.Authenticate(r)
		if err == nil {
			return id, nil
		}
		switch {
		case !errors.Is(err, ErrUnauthenticated):
			if failed == nil {
				failed = err
			}
		case refused == nil && err != ErrUnauthenticated:
			refused = err
		}
	}
	switch {
	case failed != nil:
		return Identity{}, failed
	case refused != nil:
		return Identity{}, refused
	}
	return Identity{}, ErrUnauthenticated
}
