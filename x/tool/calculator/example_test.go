package calculator_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/calculator"
)

func ExampleEval() {
	for _, expr := range []string{"1/3 + 1/6", "2^64", "(1 + 2) × 3 ÷ 4", "sqrt(2)", "1/0"} {
		v, err := calculator.Eval(expr)
		if err != nil {
			fmt.Println(expr, "->", err)
			continue
		}
		fmt.Println(expr, "->", v.Text())
	}
	// Output:
	// 1/3 + 1/6 -> 1/2 = 0.5
	// 2^64 -> 18446744073709551616
	// (1 + 2) × 3 ÷ 4 -> 9/4 = 2.25
	// sqrt(2) -> 1.4142135623730951 (approximate)
	// 1/0 -> calculator: division by zero (column 2)
}

func ExampleCalculator_Call() {
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), calculator.New()); err != nil {
		panic(err)
	}
	b, _ := reg.Lookup("calculator__eval")
	out, err := b.Call(context.Background(), tool.NoSandbox(), `{"expression":"1/7 * 14"}`)
	if err != nil {
		panic(err)
	}
	res := out.(*tool.Result)
	fmt.Println(res.Content, res.IsError)

	out, _ = b.Call(context.Background(), tool.NoSandbox(), `{"expression":"2^999999999"}`)
	res = out.(*tool.Result)
	fmt.Println(res.Content, res.IsError)
	// Output:
	// 2 false
	// calculator: the power is too large: it exceeds the 8192-bit limit for exact results and overflows a float64 (column 2) true
}
