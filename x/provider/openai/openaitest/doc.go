// Package openaitest is a chat-completions server for tests: it runs on
// 127.0.0.1, answers the n-th request with the n-th canned reply, and
// records every request, so that a test can drive the openai adapter (or
// anything else that speaks the chat-completions wire format) without a
// network and then check what was sent.
//
// A reply is an http.HandlerFunc. Stream replays chunks as server-sent
// events ending in "data: [DONE]"; Text and Call build the streams of a
// whole text answer and of one tool call; JSON answers a whole body with a
// status, for refusals and non-streamed answers; Raw sends a stream body
// byte for byte, for broken streams. Point the adapter at the server with
// openai.WithBaseURL(s.BaseURL()) and openai.WithHTTPClient(s.Client()).
//
// The server reports through the test's Errorf, so that the test fails, when
// a request body is not JSON or a request comes after the last reply (that
// request gets a 418). It closes when the test ends.
package openaitest
