// Package pack is lode's tool packs: named bundles of tools with their own
// options, chosen by configuration and mounted into one flat namespace.
//
// A Pack is a tool.RemoteSource. It may also validate its options
// (OptionsValidator), declare tools that depend on the settings
// (SpecProvider) and ship skills (SkillProvider). New builds one from typed
// Go functions in a few lines. A tool-level failure is data — return
// Failure, not an error — and a pack reaches the network only through
// HTTPClient(ctx), which refuses every request unless the application gave
// a client: with WithHTTPClient on the call's context, or in
// Settings.HTTPClient, which the router hands to every call.
//
// A Catalog holds packs by name. Settings (the tools: map of a YAML
// configuration, read by ParseConfig, plus defaults) choose which mount:
// the defaults first, then every key of tools: in the order written, each
// once. Catalog.Mount validates them — an unknown pack, options a pack does
// not take, options it refuses — checks that no two packs declare one tool
// name, and mounts a Router, which serves them all, flat into a registry,
// all or nothing. The errors the pack model words exactly — a name
// already registered, an unsupported pack, options to a pack that takes
// none, a tool name collision — read as it words them, without the
// "pack: " that starts lode's other errors; each matches its sentinel with
// errors.Is.
//
// Where this differs from the seed: default packs are validated too (with
// the options the tools: map gives them, or none), so a pack that needs
// options fails at start-up rather than on its first call; and settings
// reach a call through its context (SettingsFrom), as the router passes them.
package pack
