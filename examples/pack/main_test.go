package main

func Example() {
	main()
	// Output:
	// direct: map[message:hello]
	// echo_say -> {"message":"hi from the model"} (error: false)
	// echo_say -> 'message' must not be empty (error: true)
	// model: All echoed.
}
