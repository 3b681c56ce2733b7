package bench

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// opsPerCall is how many host operations the recording tool records.
const opsPerCall = 10

type opsBenchIn struct {
	Record bool `json:"record,omitempty"`
	Check  bool `json:"check,omitempty"`
}

// opsEngine returns an engine with the tool "ops", which records
// opsPerCall operations when asked to (and checks each with the policy
// first when asked to), and nothing otherwise, behind mws.
func opsEngine(b *testing.B, opts lathe.Options) *lathe.Engine {
	e := lathe.New(opts)
	b.Cleanup(func() { e.Close() })
	t := builtin.Must(builtin.Func(tool.Definition{Name: "ops", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, in opsBenchIn) (string, error) {
			if !in.Record {
				return "ok", nil
			}
			for range opsPerCall {
				op := lathe.Operation{Kind: "read", Subject: "src/main.go", Approval: "allow", By: "permissions",
					Bytes: 4096, Started: time.Now()}
				if in.Check {
					d, err := policy.CheckOperation(ctx, policy.OperationRequest{Kind: op.Kind, Subject: op.Subject})
					if err != nil {
						return "", err
					}
					op.Approval, op.By = string(d.Approval), d.By
				}
				lathe.RecordOperation(ctx, op)
			}
			return "ok", nil
		}))
	if err := e.Register(t); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkOperations measures what a call's host operations cost the
// engine, in the same run, against the same call of the same tool that
// records none ("floor"):
//
//   - record: the tool records opsPerCall operations (RecordOperation);
//   - check+record: it checks each with the policy first (CheckOperation,
//     under rules about operations that do not match it, so that each is
//     weighed and allowed), as package host does;
//   - audited: record, with the audit log writing the call and its
//     operations, against the same audited call without them.
//
// Each reports engine/floor and op-ns: (engine - floor) / opsPerCall, the
// cost of one operation.
func BenchmarkOperations(b *testing.B) {
	ctx := context.Background()
	quiet := json.RawMessage(`{}`)
	callOp := func(e *lathe.Engine, args json.RawMessage) func() {
		return func() {
			if out := e.Call(ctx, &tool.Call{Name: "ops", Arguments: args}); out.Result == nil || out.Result.IsError {
				b.Errorf("call failed: %+v", out.Result)
			}
		}
	}
	perOp := func(b *testing.B, f func(b *testing.B) (floor, engine time.Duration, n int)) {
		floor, engine, n := f(b)
		b.ReportMetric(float64(engine-floor)/float64(n*opsPerCall), "op-ns")
	}
	p := &policy.Policy{Rules: []policy.Rule{
		{Tool: "*", Operation: "fetch", Approval: policy.Deny},
		{Tool: "ops", Operation: "write", Args: "src/*", Approval: policy.Ask},
		{Tool: "*", Operation: "read", Args: "secrets/*", Approval: policy.Deny},
	}}
	b.Run("record", func(b *testing.B) {
		e := opsEngine(b, lathe.Options{})
		perOp(b, func(b *testing.B) (time.Duration, time.Duration, int) {
			return compareTimes(b, callOp(e, quiet), callOp(e, json.RawMessage(`{"record":true}`)))
		})
	})
	b.Run("check+record", func(b *testing.B) {
		e := opsEngine(b, lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(p, policy.Options{})}})
		perOp(b, func(b *testing.B) (time.Duration, time.Duration, int) {
			return compareTimes(b, callOp(e, quiet), callOp(e, json.RawMessage(`{"record":true,"check":true}`)))
		})
	})
	b.Run("audited", func(b *testing.B) {
		s, err := audit.Open(filepath.Join(b.TempDir(), "audit.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		r, err := audit.NewRedactor(nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		e := opsEngine(b, lathe.Options{Outer: []lathe.Middleware{audit.Middleware(s, r)}})
		perOp(b, func(b *testing.B) (time.Duration, time.Duration, int) {
			return compareTimes(b, callOp(e, quiet), callOp(e, json.RawMessage(`{"record":true}`)))
		})
	})
}

// BenchmarkPolicyScope measures what the policy's middleware costs a call
// that does no host operation, now that it hands the call its scope for
// CheckOperation: the same call through an engine without the middleware
// ("floor") and with it, allowing the call by the tool's annotations.
func BenchmarkPolicyScope(b *testing.B) {
	ctx := context.Background()
	bare := opsEngine(b, lathe.Options{})
	withPolicy := opsEngine(b, lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(&policy.Policy{}, policy.Options{})}})
	args := json.RawMessage(`{}`)
	compareTimes(b, func() {
		bare.Call(ctx, &tool.Call{Name: "ops", Arguments: args})
	}, func() {
		withPolicy.Call(ctx, &tool.Call{Name: "ops", Arguments: args})
	})
}

// compareTimes is compare for one caller, returning the times and the
// operations each side ran.
func compareTimes(b *testing.B, floorOp, engineOp func()) (floor, engine time.Duration, n int) {
	const rounds = 10
	floorOp()
	engineOp()
	b.ReportAllocs()
	b.ResetTimer()
	per := b.N/rounds + 1
	for range rounds {
		floor += timeOps(1, per, floorOp)
		engine += timeOps(1, per, engineOp)
	}
	b.StopTimer()
	n = per * rounds
	b.ReportMetric(float64(floor.Nanoseconds())/float64(n), "floor-ns/op")
	b.ReportMetric(float64(engine.Nanoseconds())/float64(n), "engine-ns/op")
	b.ReportMetric(float64(engine)/float64(floor), "engine/floor")
	return floor, engine, n
}
