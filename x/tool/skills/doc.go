// Package skills discovers skills — folders holding a SKILL.md whose YAML
// front matter gives a name and a description, and whose Markdown body
// tells a model how to do a task — and offers them as a tool source (pack):
// list (names and descriptions), load (a skill's instructions and the files
// in its folder) and read (one of those files), mounted as "skills__list"
// and so on. Prompt renders the list for a system prompt.
//
// Skills come from directories (FromDir, confined with os.Root) and from any
// fs.FS (FromFS: the embed.FS a pack ships its skills in, under the pack's
// name), in one namespace: a name defined twice is an error at New naming
// both files, as is a SKILL.md without a valid name and description. The
// sources are fixed when New builds the set; the sandbox a registry hands a
// mounted source's call (tool.SandboxFrom) is not consulted.
//
// A read cannot leave the skill's folder: the path must be relative, clean,
// free of control characters and within length limits; on disk the folder
// is opened as an os.Root of its own, so a symbolic link leading out of it
// — to the secret next door or to a sibling skill — is refused, and a file
// system that can tell links apart (fs.ReadLinkFS, as os.DirFS) is read
// without following any link at all.
//
// A hard link is the file itself under a second name, which no path check
// can see: one made in a skill's folder to a file elsewhere would be read
// as the skill's own. So a regular file with more than one hard link is
// refused — a SKILL.md fails New, naming the file; read tells the model
// why — unless AllowHardLinks (pack option allow_hard_links) accepts them.
// The count comes from Stat on the file as opened, the one then read. It
// is known on unix (st_nlink) for files on disk, through FromDir or an
// os.DirFS; file systems that report none, such as an embed.FS, get no
// check.
//
// As a pack, it is built from a tools: map by FromOptions (dir, dirs,
// max_file_bytes, allow_hard_links, tool_prefix) plus the FromFS sources
// of the packs that ship skills; WithToolPrefix names the tools for a flat
// mount beside other packs ("skill_load"), and Prompt then names them so.
package skills
