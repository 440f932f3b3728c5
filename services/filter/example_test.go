package filter_test

import (
	"errors"
	"fmt"

	"github.com/ferry-mq/ferry/services/filter"
)

func Example() {
	f, err := filter.Compile(`:name = "Bob" AND NOT (:age > 40 OR :location = "Chicago")`)
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Match(map[string]any{"name": "Bob", "age": 40.0}))
	fmt.Println(f.Match(map[string]any{"name": "Bob", "age": 41.0}))
	fmt.Println(f.Match(map[string]any{"name": "Bob", "location": "Chicago"}))
	// Output:
	// true
	// false
	// false
}

func ExampleCompile_error() {
	_, err := filter.Compile(`:team = "billing" AND :age >`)
	fmt.Println(err)

	var ferr *filter.Error
	if errors.As(err, &ferr) {
		fmt.Println(ferr.Column)
	}
	// Output:
	// column 29: expected a number after '>'
	// 29
}

func ExampleFilter_Match_types() {
	f, _ := filter.Compile(`:age = 40`)
	fmt.Println(f.Match(map[string]any{"age": 40.0}))  // a number, as decoded from JSON
	fmt.Println(f.Match(map[string]any{"age": "40"}))  // a string never equals a number
	fmt.Println(f.Match(map[string]any{"other": 1.0})) // absent
	// Output:
	// true
	// false
	// false
}
