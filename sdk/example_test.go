package sdk_test

import (
	"context"
	"os"
	"strings"

	"github.com/lathe-tools/lathe/sdk"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"description=Who to greet"`
}

func greet(_ context.Context, in greetIn) (string, error) {
	return "hello, " + in.Name, nil
}

// A tool binary's main is one call of Serve; Handle is the same for one
// request, between any reader and writer.
func Example() {
	greetTool := sdk.Func(sdk.Definition{Name: "greet", Summary: "Greet someone."}, greet)

	req := `{"protocol":1,"action":"run","tool":"greet","arguments":{"name":"Ada"},"context":{"root":"/tmp"}}`
	sdk.Handle(context.Background(), strings.NewReader(req), os.Stdout, greetTool)

	req = `{"protocol":1,"action":"schema","context":{"root":"/tmp"}}`
	sdk.Handle(context.Background(), strings.NewReader(req), os.Stdout, greetTool)
	// Output:
	// {"type":"success","content":"hello, Ada"}
	// {"tools":[{"name":"greet","summary":"Greet someone.","parameters":{"properties":{"name":{"type":"string","description":"Who to greet"}},"additionalProperties":false,"type":"object","required":["name"]}}]}
}

type deployIn struct {
	Env string `json:"env"`
}

// A tool asks with Ask or AskBool. The first run answers with the question;
// lathe runs the tool again with the answer.
func ExampleAskBool() {
	deploy := sdk.Func(sdk.Definition{Name: "deploy"}, func(ctx context.Context, in deployIn) (string, error) {
		ok, err := sdk.AskBool(ctx, "sure", "Deploy to "+in.Env+"?")
		if err != nil {
			return "", err
		}
		if !ok {
			return "not deployed", nil
		}
		return "deployed to " + in.Env, nil
	})

	req := `{"protocol":1,"action":"run","tool":"deploy","arguments":{"env":"prod"}}`
	sdk.Handle(context.Background(), strings.NewReader(req), os.Stdout, deploy)

	req = `{"protocol":1,"action":"run","tool":"deploy","arguments":{"env":"prod"},"answers":{"sure":true}}`
	sdk.Handle(context.Background(), strings.NewReader(req), os.Stdout, deploy)

	// An answer the question does not offer is an error the caller reads.
	req = `{"protocol":1,"action":"run","tool":"deploy","arguments":{"env":"prod"},"answers":{"sure":"perhaps"}}`
	sdk.Handle(context.Background(), strings.NewReader(req), os.Stdout, deploy)
	// Output:
	// {"type":"needs_input","question":{"id":"sure","text":"Deploy to prod?","answer_type":"boolean"}}
	// {"type":"success","content":"deployed to prod"}
	// {"type":"error","message":"answer \"perhaps\" to question \"sure\" is not yes or no"}
}
