package approvals_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/approvals"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// A call that asks waits in the queue until someone answers it, naming
// the approval's id and its arguments' digest.
func Example() {
	q := approvals.New(approvals.Options{Wait: time.Minute})
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{
		policy.Middleware(&policy.Policy{}, policy.Options{Fallback: q})}})
	defer e.Close()
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "deploy"},
		func(_ context.Context, in struct {
			Env string `json:"env"`
		}) (string, error) {
			return "deployed to " + in.Env, nil
		})))

	// A person elsewhere (a web page) sees the approval and answers it.
	cancel := q.Subscribe(func(c approvals.Change) {
		if !c.Settled {
			p := c.Pending
			fmt.Println("asked:", p.Tool, string(p.Arguments))
			go q.Answer(p.ID, p.Digest, policy.Answer{Verdict: policy.AllowOnce})
		}
	})
	defer cancel()

	out := e.Call(context.Background(), &tool.Call{Name: "deploy", Arguments: json.RawMessage(`{"env":"staging"}`)})
	fmt.Println(out.Result.Text())
	// Output:
	// asked: deploy {"env":"staging"}
	// deployed to staging
}
