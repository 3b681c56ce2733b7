// Package plan schedules a batch of tool calls: it runs at once the calls that
// cannot interfere with each other, and keeps the model's order between those
// that can.
//
// Each call comes with its [Effects]: the resources it reads and writes, or
// that it must run alone. Two calls conflict when one of them is exclusive,
// or when they use overlapping resources and one of them writes
// ([Effects.Conflicts]). Paths overlap when one lies beneath the other
// ([Resource.Overlaps]); [PathKey] normalises the paths a model writes.
//
// [New] turns the calls into a [Plan], a graph in which each call lists the
// earlier calls it must follow; [Plan.Run] runs it with caps on how many
// calls run at once, overall and per named group (a tool, an upstream
// server):
//
//	p := plan.New([]plan.Call{
//		{Name: "write_file", Effects: plan.Effects{Uses: []plan.Use{{Resource: plan.Resource{Kind: plan.KindPath, Key: "a.txt"}, Access: plan.Write}}}},
//		{Name: "read_file", Effects: plan.Effects{Uses: []plan.Use{{Resource: plan.Resource{Kind: plan.KindPath, Key: "a.txt"}, Access: plan.Read}}}},
//		{Name: "read_file", Effects: plan.Effects{Uses: []plan.Use{{Resource: plan.Resource{Kind: plan.KindPath, Key: "b.txt"}, Access: plan.Read}}}},
//	})
//	// p.After is [[] [0] []]: the read of a.txt follows the write; b.txt is free.
//	rep := p.Run(ctx, plan.RunOptions{Max: 16}, func(ctx context.Context, i int) plan.Status {
//		… run call i …
//		return plan.Done
//	})
//
// The package is pure: it knows nothing of tools, arguments or the engine,
// which derives the effects from a tool's definition (package lathe,
// Engine.CallBatch). docs/design/batch.md states the algorithm and what it
// guarantees.
package plan
