// Package core is what every model adapter does the same way, whatever its
// API: the settings its options fill (key, model, server, HTTP client,
// headers, tracer, retries, time limits, streaming), reading them from the
// environment and checking them in New, and the frame of one invocation
// (its span, its time limits, a consumer that stops early).
//
// An adapter embeds Settings in its own settings and keeps a Conn in its
// Provider as a named field, so that none of this becomes part of its
// public API; its exported options, errors and texts stay its own, and
// this package takes what differs (the package name that prefixes errors,
// the environment variables, the defaults) as values.
//
// retry.Sender is the matching piece of an adapter's HTTP transport: the
// attempts of one request, with the adapter's rules for waits and
// retries; apierr builds the adapter's error texts. An adapter whose
// backends resolve their servers differently (gemini: the Gemini API or
// Vertex AI) resolves the settings itself, checks the base URL with
// ParseBaseURL and still takes its Conn from NewConn. partconv words the
// artifacts the OpenAI-shaped APIs take only as text or URLs, and
// openai/internal/wire is what the two adapters on go-openai send alike;
// providertest is what the adapters' tests share.
package core
