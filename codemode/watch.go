package codemode

import (
	"strings"
	"sync"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
)

// Watch keeps the tool list in run_code's description current as the tools
// of e change (an upstream server's tools/list_changed, a tool file
// added): t is the run_code tool as it was registered in e (made by [New],
// then adjusted by the configuration), and opts the options it was made
// with. The list is replaced within whatever the description became, so a
// configured description that quotes the tool's own ({description}) keeps
// its words. Watch updates only the definition it knows: once run_code's
// description is one it did not put there (someone registered another
// run_code), it stops. A caller that replaces run_code while tools are
// changing cancels Watch first: the engine has no compare-and-swap, so a
// replacement made between Watch's look and its own could be undone.
// cancel stops it; the engine's Close stops it too.
func Watch(e *lathe.Engine, t tool.Tool, opts Options) (cancel func()) {
	opts = opts.withDefaults()
	var mu sync.Mutex
	listed := Listing(opts.listed(e.Tools()), opts.MaxListed)
	known := t.Definition.Description
	stopped := false
	var stop func()
	// Held until stop is set, so that an event delivered at once finds it.
	mu.Lock()
	defer mu.Unlock()
	stop = e.Subscribe(func(ev lathe.Event) {
		if onlyRunCode(ev.Added) && onlyRunCode(ev.Removed) {
			// A change of run_code alone changes no other tool's line.
			return
		}
		mu.Lock()
		defer mu.Unlock()
		cur, ok := e.Lookup(Name)
		if stopped || !ok {
			return
		}
		if cur.Description != known || !strings.Contains(cur.Description, listed) {
			stopped = true
			stop()
			return
		}
		next := Listing(opts.listed(e.Tools()), opts.MaxListed)
		if next == listed {
			return
		}
		t.Definition = cur
		t.Definition.Description = strings.Replace(cur.Description, listed, next, 1)
		if e.Replace([]string{Name}, t) == nil {
			listed, known = next, t.Definition.Description
		}
	}, lathe.EventToolsChanged)
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		stop()
	}
}

func onlyRunCode(names []string) bool {
	for _, n := range names {
		if n != Name {
			return false
		}
	}
	return true
}
