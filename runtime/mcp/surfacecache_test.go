package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/mcp"
)

// TestCachedCatalogStartsNoServer: with a server's catalog in the cache, a
// gateway's Features and Catalog start no server, and a read starts it; a
// catalog file others could have written is not used, and the server is
// asked instead.
func TestCachedCatalogStartsNoServer(t *testing.T) {
	u := newUpstream(t)
	u.srv.AddResource(&sdk.Resource{URI: "test://doc", Name: "doc"},
		func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "test://doc", Text: "the doc"}}}, nil
		})
	u.srv.AddPrompt(&sdk.Prompt{Name: "greet"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{}, nil
	})
	dir := filepath.Join(t.TempDir(), "mcp")
	_, p1 := openCached(t, u, dir, mcp.Options{})
	p1.Close()
	if u.inits.Load() != 1 {
		t.Fatalf("first open: %d sessions, want 1", u.inits.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A resource the server offers after its catalog was cached: the
	// cache does not list it until the server has started.
	u.srv.AddResource(&sdk.Resource{URI: "test://new", Name: "new"},
		func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "test://new", Text: "new"}}}, nil
		})
	_, p2 := openCached(t, u, dir, mcp.Options{})
	changed := make(chan struct{}, 10)
	defer p2.Watch(func(n mcp.Notice) {
		if n.Kind == mcp.NoticeResourcesChanged {
			changed <- struct{}{}
		}
	})()
	f := p2.Features(ctx)
	cat := p2.Catalog(ctx)
	if !f.Resources || !f.Prompts || len(cat.Resources) != 1 || cat.Resources[0].URI != "test://doc" ||
		len(cat.Prompts) != 1 || cat.Prompts[0].Name != "c__greet" {
		t.Fatalf("from the cache: %+v, resources %v, prompts %v", f, cat.Resources, cat.Prompts)
	}
	if u.inits.Load() != 1 {
		t.Fatalf("listing the catalog from the cache started the server (%d sessions)", u.inits.Load())
	}
	r, err := p2.ReadResource(ctx, "test://doc")
	if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "the doc" || u.inits.Load() != 2 {
		t.Fatalf("read: %+v %v after %d sessions, want the server started once more", r, err, u.inits.Load())
	}
	// Started, the server is listed anew: the watchers (lathe serve, which
	// then sends its clients list_changed) hear of it.
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no NoticeResourcesChanged within 10s of a start from the cached catalog")
	}
	if cat := p2.Catalog(ctx); len(cat.Resources) != 2 {
		t.Fatalf("catalog once started: %v, want the server's two resources", cat.Resources)
	}
	p2.Close()
	_, p4 := openCached(t, u, dir, mcp.Options{})
	if cat := p4.Catalog(ctx); len(cat.Resources) != 2 || u.inits.Load() != 2 {
		t.Fatalf("the cache after the server was listed anew: %v after %d sessions, want two resources and no start", cat.Resources, u.inits.Load())
	}
	p4.Close()

	files, _ := filepath.Glob(filepath.Join(dir, "*.surface.json"))
	if len(files) != 1 {
		t.Fatalf("catalog files: %v", files)
	}
	if err := os.Chmod(files[0], 0o666); err != nil {
		t.Fatal(err)
	}
	_, p3 := openCached(t, u, dir, mcp.Options{})
	if f := p3.Features(ctx); !f.Resources || u.inits.Load() != 3 {
		t.Fatalf("a catalog file others could write: %+v after %d sessions, want the server asked", f, u.inits.Load())
	}
	if n, err := mcp.NewToolCache(dir).Clear(); n != 1 || err != nil {
		t.Fatalf("clear: %d %v, want one server's lists removed", n, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(left) != 0 {
		t.Fatalf("left after clear: %v", left)
	}
}
