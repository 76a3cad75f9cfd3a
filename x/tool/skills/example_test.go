package skills_test

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/skills"
)

func Example() {
	// A pack ships its skills in an embed.FS; the application could add
	// skills.FromDir("./skills") for its own.
	packSkills, _ := fs.Sub(embedded, "testdata/skills")
	s, err := skills.New(skills.FromFS("demo-pack", packSkills))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	fmt.Print(s.Prompt())

	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), s); err != nil {
		panic(err)
	}
	for _, call := range []struct{ name, args string }{
		{"skills__load", `{"name":"greeting"}`},
		{"skills__read", `{"name":"greeting","path":"phrases.md"}`},
		{"skills__read", `{"name":"greeting","path":"../haiku/SKILL.md"}`},
	} {
		b, _ := reg.Lookup(call.name)
		out, _ := b.Call(context.Background(), tool.NoSandbox(), call.args)
		res := out.(*tool.Result)
		fmt.Printf("\n%s error=%v\n%s", call.name, res.IsError, res.Content)
	}
	// Output:
	// You have skills: instructions for particular tasks, with files they may refer to. When a task matches a skill's description, call skills__load with its name before you start, and follow it; read the files it mentions with skills__read.
	//
	// Skills:
	// - greeting: Greet someone warmly, in their language.
	// - haiku: Write a haiku (5-7-5 syllables) about a subject.
	//
	// skills__load error=false
	// # Skill: greeting
	//
	// # Greeting
	//
	// 1. Find out the person's language.
	// 2. Greet them with the phrase from phrases.md.
	//
	// Files in this skill's folder (read them with skills__read and the path):
	// - phrases.md
	//
	// skills__read error=false
	// - English: Hello!
	// - French: Bonjour !
	//
	// skills__read error=true
	// "../haiku/SKILL.md" leads outside the skill's folder
}
