// Package partconv holds how the OpenAI-shaped adapters (chat completions and
// Responses) put an artifact the model cannot take as it is into what it
// can: a resource or a link as text, an image as a URL. Both APIs read the
// same wording, so one change reaches both.
package partconv
