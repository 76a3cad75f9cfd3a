// Package tool holds lode's tool contracts: Tool (what a model is told),
// ToolFunc (what runs), Sandbox (where it may act), RemoteSource (a named
// set of tools served elsewhere: a pack, an MCP server) and Registry, the one
// flat namespace all of them meet in.
//
// Registration is strict: a name must match ^[a-zA-Z0-9_-]{1,64}$, a schema
// must be a valid JSON Schema for an object, and a name is owned once — a
// clash is an error naming both owners, never a silent overwrite. A mounted
// source's tools appear as "<source>__<tool>" unless it is mounted Flat; a
// name the source chose that no model API would accept (an MCP tool called
// "files.read") is offered as SafeName makes it, and calls still reach the
// source under its own name.
//
// Tools returns a sorted snapshot that changes only when the registry does;
// it never calls a remote source. A source that implements Notifier has its
// snapshot refreshed when it says its tools changed, and the registry is a
// Notifier itself, for whoever serves it.
//
// Func builds a typed tool from func(ctx, In) (Out, error): its schema is
// reflected from In, and arguments are validated against the schema
// (compiled once, at registration) before the function runs.
//
// Validation has two stages that accept exactly the same arguments. A
// quick check, compiled with the schema, reads the raw JSON once and proves
// common arguments valid (the keywords reflected schemas use: type,
// properties, required, additionalProperties, items, string enums, bounds
// on numbers, lengths and item counts); a typed tool's arguments it proves
// are decoded once, straight into In. Anything else — a keyword it does not
// know, an escaped property name, arguments that break the schema — goes to
// github.com/google/jsonschema-go, whose verdict and messages stand.
//
// A struct In of booleans, numbers and strings decodes without
// encoding/json, by a decoder compiled for it that yields exactly what
// json.Unmarshal would, or declines. When the schema asks nothing of its
// fields beyond their JSON types (as a schema reflected from such a struct
// without bounds or enums does), that decoder is the validation: it takes
// only the exact property names, each with a value of its field's type,
// and the call runs once the required fields are there; whatever it
// declines goes the way above. FuzzFusedPath holds the two side by side.
package tool
