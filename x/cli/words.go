package cli

import "strconv"

// plural is n and the noun, in the plural unless n is 1: "1 tool",
// "2 tools". Every count the command prints goes through it, so that none
// reads "1 tools" or "tool(s)".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// agree is the verb that goes with a count of n: agree(1, "waits", "wait")
// is "waits".
func agree(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
