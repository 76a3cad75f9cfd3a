// Package local is the "local" tool pack: a board of items kept as files,
// one Markdown file per item, <id>.md, with YAML front matter (id, title,
// state, stateType, labels, comments, and any free fields) and a body.
//
// Turn it on with the folder as its one option:
//
//	tools:
//	  local:
//	    path: ./board
//
// Tools: local_query (the query DSL of package query; default select id,
// title, state, stateType, labels), local_get (one item with every field
// and its body), and local_create, local_update_state, local_add_label,
// local_comment, which change the board. It ships one skill, local-board
// (Skills), telling a model how to use them.
//
// Files are reached only through an os.Root on the folder, and an id is a
// plain name (letters, digits, '.', '_', '-', starting with a letter or
// digit), so no argument can name a file outside it. A change is written
// to a temporary file in the folder, synced, renamed over the item (linked,
// for a new one, so an existing item is never replaced), and the folder
// synced: a crash leaves the old item or the new, never half of one.
// Changes within one process are serialised; two processes changing one
// item at once may lose one of the two changes, never the item.
//
// JSON has no NaN or infinity. A field holding one (YAML .nan, .inf,
// -.inf), at any depth, is filtered and sorted by local_query as that
// number (NaN matches no comparison and sorts after every number; see
// package query), and every tool returns it as the text "NaN", "Infinity"
// or "-Infinity". The file keeps what it holds.
//
// A malformed item file is not fatal: local_query reports it under
// skipped with the reason, and local_get and the changing tools refuse it
// with the reason, leaving the file as it is.
package local
