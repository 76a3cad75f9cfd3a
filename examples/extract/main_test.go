package main

func Example() {
	main()
	// Output:
	//   partial: {"vendor":"Acme GmbH","number":"INV-0042"}
	//   partial: {"vendor":"Acme GmbH","number":"INV-0042"}
	//   partial: {"vendor":"Acme GmbH","number":"INV-0042","total":1250,"currency":"EUR"}
	//   partial: {"vendor":"Acme GmbH","number":"INV-0042","total":1250,"currency":"EUR","due_date":"2026-12-31"}
	// {Vendor:Acme GmbH Number:INV-0042 Total:1250 Currency:EUR DueDate:2026-12-31}
	// the thread:
	//   user: Extract the invoice:
	//   assistant: {"vendor":"Acme GmbH","number":"INV-0042","total":"1,250.00","currency":"EUR","due_date":"2026-12-31"}
	//   user: Your answer was not accepted: the answer does not match the schema: validating root: validating /properties/total: type: 1,250.00 has type "string", want "number".
	//   assistant: {"vendor":"Acme GmbH","number":"INV-0042","total":1250,"currency":"EUR","due_date":"2026-12-31"}
}
