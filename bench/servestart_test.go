package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcptest"
)

// BenchmarkServeFirstAnswer times `lathe serve` over stdio from its start
// to the first answered request (initialize, then tools/list), in a
// workspace that configures server-everything: with the cache of its
// lists cold (cleared before each run, so that the server is started and
// listed) and warm (the server is not started at all), against the same
// in a workspace with no server (the floor), run by run alternately.
// Ending the server is not timed.
func BenchmarkServeFirstAnswer(b *testing.B) {
	argv := mcptest.Everything(b)
	bin := buildLathe(b)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	withServer := newOneShot(b, bin, "[mcp.ev]\ncommand = ["+strings.Join(quoted, ", ")+"]\n")
	bare := newOneShot(b, bin, "")
	// The sessions of the runs so far, ended (untimed) after each floor.
	var open []*sdk.ClientSession
	stop := func() {
		for _, cs := range open {
			cs.Close()
		}
		open = nil
	}
	first := func(o *oneShot, wantEv bool) func() {
		return func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.Command(o.bin, "--workspace", o.ws, "serve")
			cmd.Env, cmd.Dir = o.env, o.ws
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).
				Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				b.Fatal(err)
			}
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			ev := false
			for _, t := range res.Tools {
				ev = ev || strings.HasPrefix(t.Name, "ev__")
			}
			if ev != wantEv {
				b.Fatalf("upstream tools listed: %v, want %v", ev, wantEv)
			}
			open = append(open, cs)
		}
	}
	clear := func() {
		stop()
		if err := os.RemoveAll(filepath.Join(cacheHome(withServer), "lathe")); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		first(bare, false)()
		stop()
		first(withServer, true)()
		clear()
		compareRuns(b, first(bare, false), first(withServer, true), clear)
		stop()
	})
	b.Run("warm", func(b *testing.B) {
		first(withServer, true)()
		stop()
		compareRuns(b, first(bare, false), first(withServer, true), stop)
		stop()
	})
}

// cacheHome is the cache directory o's lathe uses.
func cacheHome(o *oneShot) string {
	for _, kv := range o.env {
		if v, ok := strings.CutPrefix(kv, "XDG_CACHE_HOME="); ok {
			return v
		}
	}
	return ""
}
