package mcp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
)

// A pool with a tool cache starts a server only when one of its tools is
// called, once the cache holds its list: the first run lists the tools and
// caches them, later runs register them at once.
func ExampleToolCache() {
	cacheDir, err := os.UserCacheDir()
	if err != nil {
		fmt.Println(err)
		return
	}
	e := lathe.New(lathe.Options{})
	defer e.Close()
	pool, err := mcp.Open(context.Background(), e,
		[]mcp.Config{{Name: "fs", Command: []string{"mcp-server-filesystem", "/srv/data"}}},
		mcp.Options{Cache: mcp.NewToolCache(filepath.Join(cacheDir, "myapp", "mcp"))})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pool.Names())
}
