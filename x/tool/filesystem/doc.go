// Package filesystem is a tool source (pack) of file tools confined to one
// root directory: read, write, edit, list, glob, search and stat, mounted as
// "filesystem__read" and so on.
//
// Flow labels: the tools that read (read, search, list, glob, stat) are
// hinted Private — the files are taken as the user's own data, so once
// one is read x/policy's flow rules about private data apply; write and
// edit bring nothing into the conversation and carry no label.
//
// The application assigns the root — New(root) — and there is no default:
// an empty root is ErrNoRoot. The root is fixed when the FS is built: the
// sandbox a registry hands a mounted source's call (tool.SandboxFrom) is
// not consulted, so one FS serves one root, and an application with several
// roots mounts an FS for each. Every path a model gives is checked by Clean
// (no empty, absolute or escaping paths, no control characters or NUL, no
// names over 255 bytes or paths over 4096) and then opened through an
// os.Root, which refuses symbolic links that lead out of the root, whether
// they are absolute or relative, and reports loops. Links that stay inside
// the root are followed; walks (list, glob, search) never descend through a
// link. Results name paths relative to the root and never show the host's
// path to it.
//
// A hard link is not a path but the file itself under a second name, so
// os.Root cannot see one made inside the root to a file outside it. The
// tools therefore refuse to read, write, edit or search a regular file
// with more than one hard link, and tell the model why; search of a
// directory skips such files and says how many. The link count comes from
// Stat on the file as opened (fstat), before anything is read or
// truncated, so the file checked is the file used. Creating a file is not
// affected. AllowHardLinks (pack option allow_hard_links) lifts the rule
// for a root where no one could have linked to an outside file. list,
// glob and stat show names and sizes, not contents, and are not checked.
// On unix the count is st_nlink; platforms that report no count get no
// check.
//
// Reads and writes are bounded (WithMaxReadBytes, WithMaxWriteBytes); a
// read too large for the limit returns whole lines and says where to go on
// (offset=N). list, glob and search are bounded in results and in entries
// visited. ReadOnly offers only the tools that change nothing, and refuses
// write and edit if they are called anyway.
//
// Everything a model can get wrong comes back as a *tool.Result with
// IsError set and a message that says what to do instead: an edit whose
// old_string occurs twice, a path through a link leading out, a binary file.
//
// As a pack, it is built from a tools: map by FromOptions (root, read_only,
// allow_hard_links, the limits, tool_prefix), and WithToolPrefix names the
// tools for a flat mount beside other packs ("fs_read").
package filesystem
