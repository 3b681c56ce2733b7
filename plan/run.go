package plan

import (
	"context"
	"slices"
)

// Status is how a call of a plan ended, or why it did not run.
type Status uint8

const (
	// Done: the call ran to an end; the calls after it may start.
	Done Status = 1 + iota
	// Failed: the call ran and failed. The calls after it still run, unless
	// the run stops on the first error.
	Failed
	// Asked: the call needs an answer before it can go on. It has not had its
	// effect, so the calls that must follow it wait.
	Asked
	// Waiting: the call did not run because it must follow a call that
	// asked, directly or through others that wait.
	Waiting
	// NotRun: the call did not start because the run was cancelled or
	// stopped on an error.
	NotRun
)

func (s Status) String() string {
	switch s {
	case Done:
		return "done"
	case Failed:
		return "failed"
	case Asked:
		return "asked"
	case Waiting:
		return "waiting"
	case NotRun:
		return "not run"
	}
	return "unknown"
}

// RunOptions bound how a plan runs. The zero value runs every call as soon
// as the calls it follows have ended.
type RunOptions struct {
	// Max caps the calls running at once; zero or less means no cap.
	Max int
	// Caps gives the size of the caps that calls name in [Call].Caps; a name
	// missing here, or with a size of zero or less, has no cap.
	Caps map[string]int
	// StopOnError stops the run at the first call that fails: the running
	// calls are cancelled and no other call starts.
	StopOnError bool
}

// Report is what became of a run.
type Report struct {
	// Status holds one status per call.
	Status []Status
	// StoppedBy is the call whose failure stopped the run, or -1.
	StoppedBy int
}

// Run runs the calls of p by calling run, each on a goroutine of its own,
// and returns when every call it started has returned.
//
// A call starts once every call it follows has ended with Done or Failed,
// so that calls which conflict never overlap in time and run in the model's
// order. Of the calls free to start, the earliest in the model's order start
// first, as many as the caps allow; a call held back by its own caps lets
// later ones pass.
//
// run receives a context that ends when ctx does or when the run stops on an
// error, and must return promptly when it ends; it returns Done, Failed or
// Asked (any other value counts as Done). Once ctx has ended, no further call
// starts. Calls that never started end as NotRun if the run was cancelled or
// stopped, and as Waiting if they follow a call that asked.
func (p *Plan) Run(ctx context.Context, opts RunOptions, run func(ctx context.Context, i int) Status) Report {
	n := len(p.Calls)
	rep := Report{Status: make([]Status, n), StoppedBy: -1}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type end struct {
		i int
		s Status
	}
	ends := make(chan end, n) // never blocks a call's goroutine
	blocked := make([]int, n) // calls each call still waits for
	next := make([][]int, n)  // next[j]: the calls that follow j
	var ready []int           // calls free to start, in the model's order
	for i, after := range p.After {
		blocked[i] = len(after)
		if blocked[i] == 0 {
			ready = append(ready, i)
		}
		for _, j := range after {
			next[j] = append(next[j], i)
		}
	}
	inCap := map[string]int{}
	fits := func(i int) bool {
		for _, c := range p.Calls[i].Caps {
			if size := opts.Caps[c]; size > 0 && inCap[c] >= size {
				return false
			}
		}
		return true
	}

	running := 0
	for {
		if ctx.Err() == nil {
			held := ready[:0]
			for k, i := range ready {
				if opts.Max > 0 && running >= opts.Max {
					held = append(held, ready[k:]...)
					break
				}
				if !fits(i) {
					held = append(held, i)
					continue
				}
				running++
				for _, c := range p.Calls[i].Caps {
					inCap[c]++
				}
				go func() { ends <- end{i, run(ctx, i)} }()
			}
			ready = held
		}
		if running == 0 {
			break
		}
		e := <-ends
		running--
		for _, c := range p.Calls[e.i].Caps {
			inCap[c]--
		}
		if e.s != Failed && e.s != Asked {
			e.s = Done
		}
		rep.Status[e.i] = e.s
		if e.s == Asked {
			continue // what follows it waits
		}
		if e.s == Failed && opts.StopOnError && rep.StoppedBy < 0 {
			rep.StoppedBy = e.i
			cancel()
		}
		for _, k := range next[e.i] {
			if blocked[k]--; blocked[k] == 0 {
				at, _ := slices.BinarySearch(ready, k)
				ready = slices.Insert(ready, at, k)
			}
		}
	}

	left := Waiting
	if ctx.Err() != nil {
		left = NotRun
	}
	for i, s := range rep.Status {
		if s == 0 {
			rep.Status[i] = left
		}
	}
	return rep
}
