package infer_test

import (
	"fmt"

	"github.com/lathe-tools/lathe/schema/infer"
)

func ExampleFor() {
	type SearchArgs struct {
		Query string `json:"query" jsonschema:"description=What to look for"`
		Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,default=20"`
	}
	raw, err := infer.For[SearchArgs]()
	if err != nil {
		panic(err)
	}
	fmt.Println(string(raw))
	// Output:
	// {"properties":{"query":{"type":"string","description":"What to look for"},"limit":{"type":"integer","minimum":1,"default":20}},"additionalProperties":false,"type":"object","required":["query"]}
}
