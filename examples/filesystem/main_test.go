package main

func Example() {
	main()
	// Output:
	// > filesystem__write {"path": "notes/todo.md", "content": "- write the report\n- send the report\n"}
	// < ok:
	// created notes/todo.md (37 bytes)
	// > filesystem__edit {"path": "notes/todo.md", "old_string": "report", "new_string": "summary"}
	// < error:
	// old_string occurs 2 times in "notes/todo.md"; include more of the surrounding text to make it unique, or set replace_all to replace every occurrence
	// > filesystem__edit {"path": "notes/todo.md", "old_string": "write the report", "new_string": "write the summary"}
	// < ok:
	// replaced 1 occurrence in notes/todo.md
	// > filesystem__read {"path": "notes/todo.md", "line_numbers": true}
	// < ok:
	//      1	- write the summary
	//      2	- send the report
	//
	// > filesystem__search {"query": "summary"}
	// < ok:
	// notes/todo.md:1: - write the summary
	// > filesystem__read {"path": "../../etc/passwd"}
	// < error:
	// path "../../etc/passwd": the path leads outside the root
	// model: The to-do list now says to write the summary.
}
