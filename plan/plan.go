package plan

import (
	"slices"
	"strings"
)

// Call is what the planner knows of one call of a batch.
type Call struct {
	// Name is the tool's name; the planner uses it only to describe the call.
	Name string `json:"name"`
	// Effects say which calls this one conflicts with.
	Effects Effects `json:"effects"`
	// Caps names the caps the call counts against while it runs (its tool,
	// its upstream server); [RunOptions].Caps gives their sizes.
	Caps []string `json:"caps,omitempty"`
}

// Plan is the schedule of a batch: for each call, the earlier calls it must
// follow. It is a directed acyclic graph whose edges run from earlier calls
// to later ones, so the model's order is always a valid order to run it in.
type Plan struct {
	// Calls are the calls of the batch, in the model's order.
	Calls []Call
	// After lists, for each call, the earlier calls it must follow, in
	// ascending order. Every call listed conflicts with it, and every
	// earlier call it conflicts with is listed or reached through the
	// listed ones. Edges that such a path already implies are left out
	// (the graph is transitively reduced) for batches of up to
	// [MaxReduced] calls.
	After [][]int
	// Stage numbers the calls by depth: 0 for a call that follows none,
	// otherwise one more than the greatest stage of the calls it follows.
	// Calls of one stage never conflict.
	Stage []int
}

// MaxReduced is the largest batch whose graph [New] reduces transitively.
// Reduction keeps a bit set of ancestors per call, n²/2 bits in all; a
// larger batch keeps the edges the index finds, which are as correct but may
// include some that other paths already imply.
const MaxReduced = 1 << 12

// maxReduced is MaxReduced, variable so that tests reach the other path.
var maxReduced = MaxReduced

// New plans calls: it finds, for each call, the earlier calls it conflicts
// with, and keeps of those the ones no other path implies. Its cost grows
// with the number of calls and of conflicts between them, not with the square
// of the number of calls: an index of the resources used so far (a tree of
// path elements per kind) finds the earlier calls that touch a resource, and
// for each resource it keeps only the last writer and the readers since, as
// every earlier call on it comes before that writer anyway.
func New(calls []Call) *Plan {
	n := len(calls)
	p := &Plan{Calls: calls, After: make([][]int, n), Stage: make([]int, n)}
	b := builder{
		idx:      newIndex(),
		lastExcl: -1,
		seen:     make([]int, n),
		followed: make([]bool, n),
	}
	if n <= maxReduced {
		b.anc = newTriangle(n)
	}
	for i := range calls {
		var deps []int
		if calls[i].Effects.Exclusive {
			deps = b.exclusive(i)
		} else {
			deps = b.shared(i, &calls[i].Effects)
		}
		p.After[i] = deps
		for _, j := range deps {
			b.followed[j] = true
			p.Stage[i] = max(p.Stage[i], p.Stage[j]+1)
		}
	}
	return p
}

// Stages groups the calls by [Plan.Stage], each group in the model's order.
// Running the stages one after another, the calls of each at once, is a
// valid schedule, though a slower one than [Plan.Run] follows.
func (p *Plan) Stages() [][]int {
	var stages [][]int
	for i, s := range p.Stage {
		for len(stages) <= s {
			stages = append(stages, nil)
		}
		stages[s] = append(stages[s], i)
	}
	return stages
}

// builder holds the state of [New] between calls.
type builder struct {
	idx      *index
	lastExcl int    // the latest exclusive call so far, or -1
	seen     []int  // seen[j] == i+1: j is already a candidate of call i
	followed []bool // followed[j]: a later call follows j
	anc      *triangle
	cands    []int // scratch
}

// exclusive returns what an exclusive call i follows: every call since the
// last exclusive one (that one included) that no other call follows yet.
// Every other call of that span comes before one of these, and every call
// before the span comes before the last exclusive call.
func (b *builder) exclusive(i int) []int {
	var deps []int
	for j := max(b.lastExcl, 0); j < i; j++ {
		if !b.followed[j] {
			deps = append(deps, j)
		}
	}
	if b.anc != nil {
		b.anc.setAll(i)
	}
	b.lastExcl = i
	// Everything before i now comes before i, so the index starts afresh.
	b.idx = newIndex()
	return deps
}

// shared returns what a call i that is not exclusive follows.
func (b *builder) shared(i int, e *Effects) []int {
	cands := b.cands[:0]
	if b.lastExcl >= 0 {
		cands = append(cands, b.lastExcl)
	}
	for _, u := range e.Uses {
		cands = b.idx.query(u, cands)
	}
	// Drop duplicates, then visit the latest first: an earlier candidate may
	// then be found to precede one already kept.
	uniq := cands[:0]
	for _, j := range cands {
		if b.seen[j] != i+1 {
			b.seen[j] = i + 1
			uniq = append(uniq, j)
		}
	}
	slices.Sort(uniq)
	b.cands = uniq
	var deps []int
	for k := len(uniq) - 1; k >= 0; k-- {
		j := uniq[k]
		if b.anc != nil {
			if b.anc.has(i, j) {
				continue
			}
			b.anc.addAncestor(i, j)
		}
		deps = append(deps, j)
	}
	slices.Reverse(deps)
	for _, u := range e.Uses {
		b.idx.insert(u, i)
	}
	return deps
}

// triangle holds, for each call i, the set of calls before it that it comes
// after, as a bit set over 0…i-1, all rows in one allocation.
type triangle struct {
	bits []uint64
	off  []int // row i is bits[off[i]:off[i+1]]
}

func newTriangle(n int) *triangle {
	t := &triangle{off: make([]int, n+1)}
	for i := range n {
		t.off[i+1] = t.off[i] + (i+63)/64
	}
	t.bits = make([]uint64, t.off[n])
	return t
}

func (t *triangle) row(i int) []uint64 { return t.bits[t.off[i]:t.off[i+1]] }

func (t *triangle) has(i, j int) bool { return t.bits[t.off[i]+j/64]&(1<<(j%64)) != 0 }

// addAncestor records that i comes after j, and so after all j comes after.
func (t *triangle) addAncestor(i, j int) {
	ri, rj := t.row(i), t.row(j)
	for w, x := range rj {
		ri[w] |= x
	}
	ri[j/64] |= 1 << (j % 64)
}

// setAll records that i comes after every call before it.
func (t *triangle) setAll(i int) {
	r := t.row(i)
	for w := range r {
		r[w] = ^uint64(0)
	}
	if i%64 != 0 {
		r[len(r)-1] = 1<<(i%64) - 1
	}
}

// bucket records the uses of one resource: its last writer and its readers
// since. Readers and writers before that writer need not be recorded: any
// later call that touches the resource conflicts with the writer, which
// comes after all of them.
type bucket struct {
	writer  int // -1 if none
	readers []int
}

// collect appends the calls of b that a use with access a conflicts with.
func (b *bucket) collect(a Access, out []int) []int {
	if b.writer >= 0 {
		out = append(out, b.writer)
	}
	if a == Write {
		out = append(out, b.readers...)
	}
	return out
}

func (b *bucket) add(a Access, i int) {
	if a == Write {
		b.writer = i
		b.readers = b.readers[:0]
	} else {
		b.readers = append(b.readers, i)
	}
}

// node is a resource in the tree of one kind: the root stands for every
// resource of the kind; below it, path keys branch at each element, and keys
// of other kinds are leaves.
type node struct {
	bucket
	kids map[string]*node
}

func newNode() *node { return &node{bucket: bucket{writer: -1}} }

// collectTree appends the conflicting calls of n and of every node below.
func (n *node) collectTree(a Access, out []int) []int {
	out = n.collect(a, out)
	for _, k := range n.kids {
		out = k.collectTree(a, out)
	}
	return out
}

// index finds the earlier calls that use a resource.
type index struct {
	all   bucket           // uses of everything
	kinds map[string]*node // the root of each kind
}

func newIndex() *index { return &index{all: bucket{writer: -1}, kinds: map[string]*node{}} }

// cut splits the first element off key: a path element, or the whole key
// for kinds other than paths.
func cut(kind, key string) (el, rest string) {
	if kind != KindPath {
		return key, ""
	}
	el, rest, _ = strings.Cut(key, "/")
	return el, rest
}

// query appends to out the calls in the index that conflict with u: those
// using everything, those using every resource of u's kind, those on a path
// above u's, on u's resource itself, and beneath it.
func (x *index) query(u Use, out []int) []int {
	out = x.all.collect(u.Access, out)
	if u.Kind == "" {
		for _, root := range x.kinds {
			out = root.collectTree(u.Access, out)
		}
		return out
	}
	n := x.kinds[u.Kind]
	if n == nil {
		return out
	}
	if u.Key == "" {
		return n.collectTree(u.Access, out)
	}
	out = n.collect(u.Access, out)
	for key := u.Key; key != ""; {
		var el string
		el, key = cut(u.Kind, key)
		if n = n.kids[el]; n == nil {
			return out
		}
		out = n.collect(u.Access, out)
	}
	for _, k := range n.kids {
		out = k.collectTree(u.Access, out)
	}
	return out
}

// insert records that call i uses u.
func (x *index) insert(u Use, i int) {
	if u.Kind == "" {
		x.all.add(u.Access, i)
		return
	}
	n := x.kinds[u.Kind]
	if n == nil {
		n = newNode()
		x.kinds[u.Kind] = n
	}
	for key := u.Key; key != ""; {
		var el string
		el, key = cut(u.Kind, key)
		k := n.kids[el]
		if k == nil {
			if n.kids == nil {
				n.kids = map[string]*node{}
			}
			k = newNode()
			n.kids[el] = k
		}
		n = k
	}
	n.add(u.Access, i)
}
