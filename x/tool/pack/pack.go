package pack

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/lodeworks/lode/tool"
)

// Pack is a named bundle of tools: a tool.RemoteSource. Its Call returns
// tool-level failures as data (Failure), and a Go error only when the call
// could not be made at all (a transport failure).
//
// A pack may also implement OptionsValidator, SpecProvider and
// SkillProvider; the catalog and the router find them by type assertion.
type Pack interface {
	tool.RemoteSource
}

// OptionsValidator is implemented by packs that take options: the value of
// their key in the tools: map. A pack without it accepts only empty options.
type OptionsValidator interface {
	ValidateOptions(options map[string]any) error
}

// SpecProvider is implemented by packs whose tools depend on the settings
// they are mounted with. When present, the router lists ToolSpecs(settings)
// instead of calling Tools.
type SpecProvider interface {
	ToolSpecs(settings Settings) []tool.Tool
}

// SkillProvider is implemented by packs that ship skills: an fs.FS whose
// folders each hold a SKILL.md file. A nil fs.FS means none.
type SkillProvider interface {
	Skills() fs.FS
}

// Success is the result of a tool call that worked; v reaches the model as
// rendered by the handler.
func Success(v any) *tool.Result { return &tool.Result{Value: v} }

// Failure is the result of a tool call that failed in a way the model
// should read and can act on: msg is a human-readable summary.
func Failure(msg string) *tool.Result { return &tool.Result{Content: msg, IsError: true} }

// Failuref is Failure with a formatted message.
func Failuref(format string, args ...any) *tool.Result {
	return Failure(fmt.Sprintf(format, args...))
}

// Errors matched with errors.Is; each is wrapped in a message that names
// the pack or tool concerned. Where the pack model words a message
// exactly — a name already registered, an unknown pack, options to a pack
// that takes none, a tool name collision — the error returned reads as
// the model words it, without the "pack: " prefix, and still matches its
// sentinel.
var (
	// ErrBlankName: a pack was registered without a name.
	ErrBlankName = errors.New("pack: tool provider name is blank")
	// ErrAlreadyRegistered: another pack holds the name.
	ErrAlreadyRegistered = errors.New("pack: tool provider already registered for name")
	// ErrUnknownPack: settings name a pack the catalog does not hold.
	ErrUnknownPack = errors.New("pack: unsupported tool pack")
	// ErrNoOptions: options were given to a pack that takes none.
	ErrNoOptions = errors.New("pack: pack takes no options")
)

// exactError is a message the pack model words exactly, matching err.
type exactError struct {
	msg string
	err error
}

func (e *exactError) Error() string { return e.msg }
func (e *exactError) Unwrap() error { return e.err }

// OptionsError reports options a pack refused at start-up.
type OptionsError struct {
	Pack string
	// Err is the pack's reason; ErrNoOptions when the pack takes none.
	Err error
}

func (e *OptionsError) Error() string {
	if errors.Is(e.Err, ErrNoOptions) {
		return fmt.Sprintf("tools.%s is not supported by the %q pack", e.Pack, e.Pack)
	}
	return fmt.Sprintf("tools.%s: %v", e.Pack, e.Err)
}

func (e *OptionsError) Unwrap() error { return e.Err }

// CollisionError reports a tool name declared by two mounted packs.
type CollisionError struct {
	Name          string
	First, Second string
}

func (e *CollisionError) Error() string {
	return fmt.Sprintf("tool name collision: %s is declared by both the %q and %q packs", e.Name, e.First, e.Second)
}

// Is matches tool.ErrNameTaken, like every other name clash.
func (e *CollisionError) Is(target error) bool { return target == tool.ErrNameTaken }
