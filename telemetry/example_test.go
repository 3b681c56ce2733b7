package telemetry_test

import (
	"context"
	"fmt"
	"sort"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/telemetry"
	"github.com/lathe-tools/lathe/tool"
)

// An engine whose calls are traced: the call's span, with the policy's
// decision and the tool's run as its children. A program would export the
// spans over OTLP (FromEnvironment); here they are kept in memory.
func Example() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())

	tel, err := telemetry.New(telemetry.Options{TracerProvider: tp})
	if err != nil {
		fmt.Println(err)
		return
	}
	allowAll := &policy.Policy{Rules: []policy.Rule{{Tool: "*", Approval: policy.Allow}}}
	outer, inner := tel.Stages(nil, []lathe.Middleware{policy.Middleware(allowAll, policy.Options{})})
	e := lathe.New(lathe.Options{Outer: outer, Middleware: inner})
	defer e.Close()
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "greet"},
		func(_ context.Context, in struct {
			Name string `json:"name"`
		}) (string, error) {
			return "hello, " + in.Name, nil
		})))

	e.Call(context.Background(), &tool.Call{ID: "c1", Name: "greet", Arguments: []byte(`{"name":"Ada"}`)})

	var names []string
	for _, s := range spans.GetSpans() {
		attrs := map[string]string{}
		for _, kv := range s.Attributes {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		names = append(names, fmt.Sprintf("%s tool=%s decision=%s", s.Name, attrs["gen_ai.tool.name"], attrs["lathe.decision"]))
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Println(n)
	}
	// Output:
	// execute_tool greet tool=greet decision=allow
	// lathe.policy tool=greet decision=allow
	// lathe.run greet tool=greet decision=
}
