package plan

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func calls(effects ...Effects) []Call {
	cs := make([]Call, len(effects))
	for i, e := range effects {
		cs[i] = Call{Name: fmt.Sprint("c", i), Effects: e}
	}
	return cs
}

func TestNewFixed(t *testing.T) {
	excl := Effects{Exclusive: true}
	tests := []struct {
		name  string
		calls []Call
		after [][]int
		stage []int
	}{
		{"independent reads run at once",
			calls(uses(read(pathRes("a"))), uses(read(pathRes("a"))), uses(read(pathRes("b")))),
			[][]int{nil, nil, nil}, []int{0, 0, 0}},
		{"a read follows the write of its file, not the other",
			calls(uses(write(pathRes("a"))), uses(write(pathRes("b"))), uses(read(pathRes("a")))),
			[][]int{nil, nil, {0}}, []int{0, 0, 1}},
		{"a write follows every read since the last write",
			calls(uses(write(pathRes("a"))), uses(read(pathRes("a"))), uses(read(pathRes("a"))), uses(write(pathRes("a")))),
			[][]int{nil, {0}, {0}, {1, 2}}, []int{0, 1, 1, 2}},
		{"an implied edge is left out",
			calls(uses(write(pathRes("d/f"))), uses(write(pathRes("d"))), uses(read(pathRes("d/f")))),
			[][]int{nil, {0}, {1}}, []int{0, 1, 2}},
		{"a directory listing follows writes beneath it",
			calls(uses(write(pathRes("d/x"))), uses(write(pathRes("d/y"))), uses(write(pathRes("e"))), uses(read(pathRes("d")))),
			[][]int{nil, nil, nil, {0, 1}}, []int{0, 0, 0, 1}},
		{"an exclusive call splits the batch",
			calls(uses(read(pathRes("a"))), uses(read(pathRes("b"))), excl, uses(read(pathRes("a"))), Effects{}),
			[][]int{nil, nil, {0, 1}, {2}, {2}}, []int{0, 0, 1, 2, 2}},
		{"an exclusive call follows only the last calls of each chain",
			calls(uses(write(pathRes("a"))), uses(read(pathRes("a"))), uses(read(pathRes("b"))), excl),
			[][]int{nil, {0}, nil, {1, 2}}, []int{0, 1, 0, 2}},
		{"a read of everything follows the writes, not the reads",
			calls(uses(write(pathRes("a"))), uses(read(pathRes("b"))), uses(read(Resource{})), uses(write(Resource{Kind: "branch", Key: "main"}))),
			[][]int{nil, nil, {0}, {2}}, []int{0, 0, 1, 2}},
		{"calls that touch nothing run at once with everything but exclusive calls",
			calls(uses(write(Resource{})), Effects{}, excl, Effects{}),
			[][]int{nil, nil, {0, 1}, {2}}, []int{0, 0, 1, 2}},
	}
	for _, tt := range tests {
		p := New(tt.calls)
		if !reflect.DeepEqual(p.After, tt.after) {
			t.Errorf("%s: after = %v, want %v", tt.name, p.After, tt.after)
		}
		if !reflect.DeepEqual(p.Stage, tt.stage) {
			t.Errorf("%s: stage = %v, want %v", tt.name, p.Stage, tt.stage)
		}
	}
}

func TestStages(t *testing.T) {
	p := New(calls(uses(write(pathRes("a"))), uses(read(pathRes("a"))), uses(read(pathRes("b"))), Effects{Exclusive: true}))
	if got, want := p.Stages(), [][]int{{0, 2}, {1}, {3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("stages = %v, want %v", got, want)
	}
	if got := New(nil).Stages(); len(got) != 0 {
		t.Errorf("stages of nothing = %v", got)
	}
}

// resources is a small world in which random batches collide often: paths
// above, beneath and beside each other, and a kind compared exactly.
var resources = []Resource{
	pathRes(""), pathRes("a"), pathRes("a/b"), pathRes("a/b/c"), pathRes("a/bc"), pathRes("a/x"), pathRes("b"), pathRes("c/d"),
	{Kind: "branch"}, {Kind: "branch", Key: "main"}, {Kind: "branch", Key: "dev"}, {Kind: "branch", Key: "main/x"},
	{},
}

func randomEffects(r *rand.Rand) Effects {
	switch x := r.IntN(100); {
	case x < 4:
		return Effects{Exclusive: true}
	case x < 12:
		return Effects{}
	}
	var e Effects
	for range 1 + r.IntN(3) {
		res := resources[r.IntN(len(resources))]
		if res.Kind == "" && r.IntN(3) > 0 { // keep "everything" rare
			res = resources[r.IntN(len(resources)-1)]
		}
		a := Read
		if r.IntN(3) == 0 {
			a = Write
		}
		e.Uses = append(e.Uses, Use{Resource: res, Access: a})
	}
	return e
}

func randomCalls(r *rand.Rand, n int) []Call {
	cs := make([]Call, n)
	for i := range cs {
		cs[i] = Call{Name: fmt.Sprint("c", i), Effects: randomEffects(r)}
	}
	return cs
}

// ancestors returns, for each call, the set of calls it follows directly or
// through others.
func ancestors(p *Plan) [][]bool {
	anc := make([][]bool, len(p.After))
	for i, after := range p.After {
		anc[i] = make([]bool, i)
		for _, j := range after {
			anc[i][j] = true
			for k, yes := range anc[j] {
				anc[i][k] = anc[i][k] || yes
			}
		}
	}
	return anc
}

// checkPlan checks a plan against the pairwise definition of conflict: every
// edge joins conflicting calls, earlier to later; every pair of conflicting
// calls is ordered by a path; with reduce, no edge is implied by a path; and
// stages separate conflicting calls.
func checkPlan(t *testing.T, cs []Call, p *Plan, reduce bool) {
	t.Helper()
	anc := ancestors(p)
	for i, after := range p.After {
		if !slices.IsSorted(after) {
			t.Fatalf("after[%d] = %v is not sorted", i, after)
		}
		for _, j := range after {
			if j >= i {
				t.Fatalf("call %d follows later call %d", i, j)
			}
			if !cs[j].Effects.Conflicts(&cs[i].Effects) {
				t.Fatalf("call %d (%v) follows call %d (%v), which it does not conflict with",
					i, &cs[i].Effects, j, &cs[j].Effects)
			}
			if !reduce {
				continue
			}
			for _, k := range after {
				if j < k && anc[k][j] {
					t.Fatalf("edge %d→%d is implied by %d→…→%d", j, i, j, k)
				}
			}
		}
		for j := range i {
			if cs[j].Effects.Conflicts(&cs[i].Effects) {
				if !anc[i][j] {
					t.Fatalf("call %d (%v) conflicts with call %d (%v) but does not follow it\nafter = %v",
						i, &cs[i].Effects, j, &cs[j].Effects, p.After)
				}
				if p.Stage[j] >= p.Stage[i] {
					t.Fatalf("conflicting calls %d and %d in stages %d and %d", j, i, p.Stage[j], p.Stage[i])
				}
			}
		}
	}
}

func TestNewProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 250 {
		cs := randomCalls(r, 1+r.IntN(40))
		p := New(cs)
		checkPlan(t, cs, p, true)
		if t.Failed() {
			t.Fatalf("round %d", round)
		}
	}
}

// TestNewUnreduced covers batches too large to reduce, with a small limit.
func TestNewUnreduced(t *testing.T) {
	defer func(old int) { maxReduced = old }(maxReduced)
	maxReduced = 0
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		cs := randomCalls(r, 1+r.IntN(40))
		checkPlan(t, cs, New(cs), false)
	}
}

func TestNewLargeChains(t *testing.T) {
	// 3000 writes of one file: a chain, each following the one before.
	cs := make([]Call, 3000)
	for i := range cs {
		cs[i].Effects = uses(write(pathRes("f")))
	}
	p := New(cs)
	for i := 1; i < len(cs); i++ {
		if !reflect.DeepEqual(p.After[i], []int{i - 1}) {
			t.Fatalf("after[%d] = %v", i, p.After[i])
		}
	}
	if p.Stage[len(cs)-1] != len(cs)-1 {
		t.Errorf("last stage = %d", p.Stage[len(cs)-1])
	}
}
