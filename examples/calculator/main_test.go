package main

func Example() {
	main()
	// Output:
	// Go API: 1/3 + 1/6 = 1/2 = 0.5
	// user: What is (1/3 + 1/6) × 2^10, and 1/(2-2)?
	// assistant: call calculator__eval {"expression": "(1/3 + 1/6) × 2^10"}
	// assistant: call calculator__eval {"expression": "1/(2 - 2)"}
	// tool: 512 (error: false)
	// tool: calculator: division by zero (column 2) (error: true)
	// assistant: (1/3 + 1/6) × 2^10 is 512; 1/(2 - 2) has no value.
}
