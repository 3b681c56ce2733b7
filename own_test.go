package lathe_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
)

// ownLog records the order in which things close.
type ownLog struct {
	mu    sync.Mutex
	order []string
}

func (l *ownLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.order = append(l.order, s)
}

type ownCloser func() error

func (f ownCloser) Close() error { return f() }

type ownedRuntime struct {
	log *ownLog
}

func (r ownedRuntime) Execute(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
	return &tool.Outcome{Result: tool.TextResult("ok")}, nil
}

func (r ownedRuntime) Close() error { r.log.add("runtime"); return nil }

// What an engine owns is closed with it, after the runtimes of its tools and
// in the reverse order of Own, whether or not a tool refers to it; handed to
// a closed engine, it is closed at once.
func TestOwnClosesWithTheEngine(t *testing.T) {
	log := &ownLog{}
	e := lathe.New(lathe.Options{})
	if err := e.Register(tool.Tool{Definition: tool.Definition{Name: "t", InputSchema: []byte(`{"type":"object"}`)},
		Runtime: ownedRuntime{log}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"first", "second"} {
		if err := e.Own(ownCloser(func() error { log.add(name); return nil })); err != nil {
			t.Fatal(err)
		}
	}
	if len(log.order) != 0 {
		t.Fatalf("closed before the engine: %v", log.order)
	}
	e.Close()
	if want := []string{"runtime", "second", "first"}; !slices.Equal(log.order, want) {
		t.Fatalf("close order = %v, want %v", log.order, want)
	}
	e.Close()
	if len(log.order) != 3 {
		t.Fatalf("a second Close closed again: %v", log.order)
	}
	late := false
	if err := e.Own(ownCloser(func() error { late = true; return nil })); err == nil {
		t.Error("Own on a closed engine returned no error")
	}
	if !late {
		t.Error("Own on a closed engine did not close what it was handed")
	}
}
