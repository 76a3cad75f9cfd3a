package output_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/script"
)

type Triage struct {
	Category string `json:"category" jsonschema:"enum=bug,enum=billing,enum=other"`
	Urgent   bool   `json:"urgent"`
}

// A typed answer from a scripted model. The script says nothing about
// response formats, so the answer comes through the final-answer tool.
func ExampleRun() {
	model := script.Play(script.Call("c1", output.DefaultToolName, `{"category":"billing","urgent":true}`))
	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "I was charged twice, fix it today!"})

	got, err := output.Run[Triage](context.Background(), loop.New(), thread, model)
	fmt.Printf("%+v %v\n", got, err)
	// Output:
	// {Category:billing Urgent:true} <nil>
}

// A model that never answers correctly ends the run with an
// *InvalidError holding its last answer.
func ExampleInvalidError() {
	model := script.Play(
		script.Call("c1", output.DefaultToolName, `{"category":"sales","urgent":false}`),
		script.Call("c2", output.DefaultToolName, `{"category":"sales"}`),
	)
	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "Do you sell gift cards?"})

	_, err := output.Run[Triage](context.Background(), nil, thread, model, output.WithMaxAttempts(2))
	var ie *output.InvalidError
	fmt.Println(errors.Is(err, output.ErrInvalid), errors.As(err, &ie))
	fmt.Println(ie.Attempts, ie.Last)
	// Output:
	// true true
	// 2 {"category":"sales"}
}

// Decode validates and decodes an answer obtained some other way.
func ExampleAnswer_Decode() {
	a, err := output.New[Triage]()
	if err != nil {
		panic(err)
	}
	fmt.Println(string(a.Schema()))
	v, err := a.Decode(`{"category":"bug","urgent":false}`)
	fmt.Printf("%+v %v\n", v, err)
	// Output:
	// {"properties":{"category":{"type":"string","enum":["bug","billing","other"]},"urgent":{"type":"boolean"}},"additionalProperties":false,"type":"object","required":["category","urgent"]}
	// {Category:bug Urgent:false} <nil>
}

type printPartials struct{}

func (printPartials) Emit(_ context.Context, ev loop.Event) {
	if p, ok := ev.(output.PartialEvent[Triage]); ok {
		fmt.Printf("%+v\n", p.Value)
	}
}

// Partials lets an observer watch the answer fill in.
func ExamplePartials() {
	model := script.New([]script.Step{
		script.Call("c1", output.DefaultToolName, `{"category":"bug","urgent":true}`),
	}, script.WithChunkSize(12))
	step := loop.New(loop.WithObserver(output.Partials[Triage](printPartials{})))
	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "The app crashes on start."})

	_, _ = output.Run[Triage](context.Background(), step, thread, model)
	_ = step.Flush(context.Background())
	// Output:
	// {Category: Urgent:false}
	// {Category:bug Urgent:false}
	// {Category:bug Urgent:true}
}
