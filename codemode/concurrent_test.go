package codemode_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/codemode"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// gateTool is a read-only tool whose calls wait, up to a few seconds (or
// until their context ends), until want of them have been running at
// once; it records the most it saw. Calls made one after another would
// each wait alone and see 1.
type gateTool struct {
	mu     sync.Mutex
	in     int
	peak   int
	want   int
	hold   time.Duration
	change chan struct{}
}

func addGate(t *testing.T, w *load.Workspace, want int, hold time.Duration) *gateTool {
	t.Helper()
	g := &gateTool{want: want, hold: hold, change: make(chan struct{})}
	type in struct {
		I int `json:"i"`
	}
	tl := builtin.Must(builtin.Func(tool.Definition{Name: "gate", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, a in) (string, error) {
			g.mu.Lock()
			g.in++
			g.peak = max(g.peak, g.in)
			close(g.change)
			g.change = make(chan struct{})
			g.mu.Unlock()
			defer func() {
				g.mu.Lock()
				g.in--
				g.mu.Unlock()
			}()
			wait := time.After(g.hold)
			for {
				g.mu.Lock()
				full, ch := g.peak >= g.want, g.change
				g.mu.Unlock()
				if full {
					return fmt.Sprint(a.I), nil
				}
				select {
				case <-ch:
				case <-wait:
					return fmt.Sprint(a.I), nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
		}))
	if err := w.Engine.Register(tl); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g *gateTool) max() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}

// TestConcurrentCalls: a script's calls started together (Promise.all) run
// at once through the whole pipeline, up to max_concurrent_calls; each has
// its own audit record whose parent is run_code's, and its own call id.
func TestConcurrentCalls(t *testing.T) {
	for _, tc := range []struct {
		toml       string
		calls, max int
	}{{"", 4, 4}, {"[tools.run_code.options]\nmax_concurrent_calls = 2\n", 5, 2}} {
		t.Run(fmt.Sprintf("%d at once", tc.max), func(t *testing.T) {
			w := open(t, map[string]string{"lathe.toml": tc.toml + rule("run_code", "allow")}, codemode.Options{}, nil, nil)
			g := addGate(t, w, tc.max, 5*time.Second)
			var got []string
			value(t, script(t, w, fmt.Sprintf(`const ids = Array.from({length: %d}, (_, i) => i);
return await Promise.all(ids.map(i => tools.gate({i})));`, tc.calls)), &got)
			if strings.Join(got, ",") != strings.Join(strings.Split("0,1,2,3,4", ",")[:tc.calls], ",") {
				t.Errorf("the answers %q did not reach their own promises", got)
			}
			if p := g.max(); p != tc.max {
				t.Errorf("at most %d calls ran at once, want %d", p, tc.max)
			}
			var rc int64
			ids := map[string]bool{}
			var children int
			for _, r := range records(t, w) {
				switch r.Tool {
				case codemode.Name:
					rc = r.ID
				case "gate":
					children++
					ids[r.CallID] = true
				}
			}
			for _, r := range records(t, w) {
				if r.Tool == "gate" && (r.Parent != rc || !strings.HasPrefix(r.CallID, "c1/") || r.Outcome != "ok") {
					t.Errorf("a nested record %+v, want parent %d, a call id under c1 and ok", r, rc)
				}
			}
			if children != tc.calls || len(ids) != tc.calls {
				t.Errorf("%d nested records with %d call ids, want %d of each", children, len(ids), tc.calls)
			}
		})
	}
}

// TestConcurrentCallsLimits: calls started together still count against
// max_calls, and the script's deadline ends the ones running: run_code
// times out when its time is up, not when its calls would have ended.
func TestConcurrentCallsLimits(t *testing.T) {
	t.Run("max_calls", func(t *testing.T) {
		w := open(t, map[string]string{"lathe.toml": "[tools.run_code.options]\nmax_calls = 3\n" + rule("run_code", "allow")},
			codemode.Options{}, nil, nil)
		addGate(t, w, 3, 5*time.Second)
		var got []string
		value(t, script(t, w, `const r = await Promise.allSettled([0, 1, 2, 3, 4].map(i => tools.gate({i})));
return r.map(x => x.status === "fulfilled" ? "ok" : x.reason.message.slice(0, 40));`), &got)
		ok, tooMany := 0, 0
		for _, s := range got {
			switch {
			case s == "ok":
				ok++
			case strings.Contains(s, "too many tool calls"):
				tooMany++
			}
		}
		if ok != 3 || tooMany != 2 {
			t.Errorf("with max_calls = 3, five calls at once: %q, want three ok and two refused", got)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		w := open(t, map[string]string{"lathe.toml": "[tools.run_code]\ntimeout = \"1s\"\n" + rule("run_code", "allow")},
			codemode.Options{}, nil, nil)
		// The gate wants more calls than the script makes: each waits
		// for its whole hold, far past the script's second.
		addGate(t, w, 10, 15*time.Second)
		start := time.Now()
		out := script(t, w, `return await Promise.all([0, 1, 2].map(i => tools.gate({i})));`)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("run_code took %s with a timeout of 1s", d)
		}
		if out.Result == nil || out.Result.ErrorKind != tool.KindTimeout {
			t.Fatalf("run_code = %+v, want a timeout", out.Result)
		}
		n := 0
		for _, r := range records(t, w) {
			if r.Tool == "gate" {
				n++
				if r.Outcome == "ok" {
					t.Errorf("a nested call went on past the deadline: %+v", r)
				}
			}
		}
		if n != 3 {
			t.Errorf("%d nested records, want the 3 calls made", n)
		}
	})
}
