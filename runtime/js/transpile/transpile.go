// Package transpile turns a JavaScript or TypeScript tool file into the one
// script lathe's embedded engine runs: esbuild bundles the file and the
// files it imports by relative path into an IIFE whose global is
// __lathe_tool (see [GlobalName]), with a source map, so that an error
// points at the line of the .ts file a person wrote.
//
// A tool is code lathe runs, so the package reads every file itself (never
// through a link, only regular files within the tool's root, and only
// files of this user that no one else may write) and reports each file's
// bytes in [Result].Inputs: the bytes compiled are the bytes a person is
// asked to trust. An import of anything but a relative path (a Node
// builtin such as "fs", or a package) is an error naming the importing
// file and line: the engine has no Node, only the host API.
//
// [Build] keeps its output in a cache keyed by the content of the tool
// file and of every file it imported, in lathe's per-user cache directory
// (see [DefaultCacheDir]), never in the workspace: a later load with the
// same bytes skips esbuild.
//
// esbuild is the package's own dependency; nothing else in lathe imports
// it.
package transpile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/lathe-tools/lathe/internal/statedir"
)

// GlobalName is the global the bundle assigns the tool module's exports
// to: its default export is globalThis.__lathe_tool.default.
const GlobalName = "__lathe_tool"

// MaxFileSize bounds each file a tool is built from.
const MaxFileSize = 4 << 20

// version changes the cache key whenever the output for the same inputs
// may change: esbuild's version (as go.mod pins it) and this package's options.
const version = "lathe-transpile-1/esbuild-v0.28.2"

// Options configure [Build].
type Options struct {
	// Root is the directory every file of the tool must lie in (its real
	// path is taken). Empty means the tool file's own directory.
	Root string
	// CacheDir keeps built bundles, keyed by content. Empty means no
	// cache.
	CacheDir string
	// Workspace, when set, is a directory CacheDir must not lie in: a tool
	// that can write the workspace could otherwise write the code lathe
	// runs.
	Workspace string
	// Node builds for node (runtime "node"): a CommonJS module, with Node's
	// builtins left to node and packages bundled from the tool's own
	// node_modules (which must lie under Root).
	Node bool
}

// Input is one file a bundle was built from.
type Input struct {
	// Path is the file's real absolute path.
	Path string
	// Data is the bytes that were compiled.
	Data []byte
}

// Result is a built tool.
type Result struct {
	// Code is the bundle: an IIFE that assigns the module's exports to
	// globalThis.__lathe_tool.
	Code []byte
	// SourceMap maps Code back to the files of Inputs (version 3 JSON).
	SourceMap []byte
	// Inputs are the files the bundle holds, the tool file first, then
	// the files it imported in path order.
	Inputs []Input
	// Cached says the bundle came from the cache, not from esbuild.
	Cached bool
}

// Sum returns the SHA-256 (hex) of every input, in order: the content
// hash the bundle is cached under and a tool's definition is kept by.
func (r *Result) Sum() string {
	h := sha256.New()
	for _, in := range r.Inputs {
		fmt.Fprintf(h, "%s\x00%d\x00", in.Path, len(in.Data))
		h.Write(in.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// DefaultCacheDir returns where bundles are cached: $LATHE_CACHE_DIR/js
// when the variable is set, otherwise lathe/js in the user's cache
// directory. It returns "" when there is no such place.
func DefaultCacheDir() string {
	// The variable is runtime/process's CacheDirEnv, named here so that
	// this package does not pull in the process runtime and the sandbox.
	if dir := os.Getenv("LATHE_CACHE_DIR"); dir != "" {
		return filepath.Join(dir, "js")
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "lathe", "js")
}

// Error is a build that failed: each message names its file, line and
// column.
type Error struct {
	File     string
	Messages []string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.File, strings.Join(e.Messages, "; "))
}

// Build bundles the tool file (.ts, .js, .mts, .mjs) and the files it
// imports by relative path. See the package documentation for the rules.
func Build(file string, opts Options) (*Result, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	root := opts.Root
	if root == "" {
		root = filepath.Dir(abs)
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, err
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return nil, fmt.Errorf("%s: the tool's directory: %w", file, err)
	}
	// The tool file's own name is kept (a link named NAME.ts is refused
	// when it is read, rather than followed), its directory resolved.
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	entry := filepath.Join(dir, filepath.Base(abs))
	if !statedir.Within(root, entry) {
		return nil, fmt.Errorf("%s lies outside %s", file, root)
	}
	entryData, err := readSource(entry)
	if err != nil {
		return nil, err
	}
	cache := opts.CacheDir
	if cache != "" {
		if err := checkCacheDir(cache, opts.Workspace); err != nil {
			return nil, err
		}
	}
	key := cacheKey(entry, root, entryData, opts.Node)
	if cache != "" {
		if r := lookup(cache, key, entry, entryData); r != nil {
			return r, nil
		}
	}
	r, err := build(entry, root, entryData, opts.Node)
	if err != nil {
		return nil, err
	}
	if cache != "" {
		// A cache that cannot be written costs the next load time, not
		// this one its tool.
		_ = store(cache, key, r)
	}
	return r, nil
}

// build runs esbuild with a plugin that reads every file itself.
func build(entry, root string, entryData []byte, node bool) (*Result, error) {
	var (
		mu     sync.Mutex
		inputs = map[string][]byte{entry: entryData}
	)
	plugin := api.Plugin{
		Name: "lathe",
		Setup: func(b api.PluginBuild) {
			b.OnResolve(api.OnResolveOptions{Filter: ".*"}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
				if a.Kind == api.ResolveEntryPoint {
					return api.OnResolveResult{Path: entry, Namespace: "file"}, nil
				}
				if node {
					return api.OnResolveResult{}, nil
				}
				if !strings.HasPrefix(a.Path, "./") && !strings.HasPrefix(a.Path, "../") {
					return api.OnResolveResult{}, fmt.Errorf("cannot import %q: a tool file imports only files beside it, by relative path; "+
						"it runs with no Node builtins and no packages (use ctx for files, fetch and commands, or a packaged tool with runtime \"node\")", a.Path)
				}
				return api.OnResolveResult{}, nil
			})
			b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: "file"}, func(a api.OnLoadArgs) (api.OnLoadResult, error) {
				p := a.Path
				if !statedir.Within(root, p) {
					return api.OnLoadResult{}, fmt.Errorf("%s lies outside the tool's directory %s", p, root)
				}
				mu.Lock()
				data, ok := inputs[p]
				mu.Unlock()
				if !ok {
					var err error
					if data, err = readSource(p); err != nil {
						return api.OnLoadResult{}, err
					}
					mu.Lock()
					inputs[p] = data
					mu.Unlock()
				}
				s := string(data)
				return api.OnLoadResult{Contents: &s, Loader: loaderFor(p), ResolveDir: filepath.Dir(p)}, nil
			})
		},
	}
	bo := api.BuildOptions{
		EntryPoints:    []string{entry},
		Bundle:         true,
		Write:          false,
		Format:         api.FormatIIFE,
		GlobalName:     GlobalName,
		Platform:       api.PlatformNeutral,
		Target:         api.ES2022,
		Sourcemap:      api.SourceMapExternal,
		SourcesContent: api.SourcesContentInclude,
		Outfile:        filepath.Join(root, ".lathe-bundle.js"),
		AbsWorkingDir:  root,
		LogLevel:       api.LogLevelSilent,
		Charset:        api.CharsetUTF8,
		Plugins:        []api.Plugin{plugin},
	}
	if node {
		bo.Platform, bo.Format, bo.GlobalName = api.PlatformNode, api.FormatCommonJS, ""
	}
	res := api.Build(bo)
	if len(res.Errors) > 0 {
		return nil, buildError(entry, root, res.Errors)
	}
	r := &Result{}
	for _, f := range res.OutputFiles {
		if strings.HasSuffix(f.Path, ".map") {
			r.SourceMap = f.Contents
		} else {
			r.Code = f.Contents
		}
	}
	if r.Code == nil {
		return nil, fmt.Errorf("%s: esbuild wrote no bundle", entry)
	}
	r.Inputs = append(r.Inputs, Input{Path: entry, Data: entryData})
	var rest []string
	for p := range inputs {
		if p != entry {
			rest = append(rest, p)
		}
	}
	sort.Strings(rest)
	for _, p := range rest {
		r.Inputs = append(r.Inputs, Input{Path: p, Data: inputs[p]})
	}
	return r, nil
}

// buildError turns esbuild's messages into one error naming each file,
// line and column (the column counted from 1, as editors do).
func buildError(entry, root string, msgs []api.Message) error {
	e := &Error{File: entry}
	for _, m := range msgs {
		if l := m.Location; l != nil {
			// esbuild names files relative to its working directory, the
			// tool's root.
			file := l.File
			if !filepath.IsAbs(file) {
				file = filepath.Join(root, file)
			}
			e.Messages = append(e.Messages, fmt.Sprintf("%s:%d:%d: %s", file, l.Line, l.Column+1, m.Text))
		} else {
			e.Messages = append(e.Messages, m.Text)
		}
	}
	if len(e.Messages) == 1 && strings.HasPrefix(e.Messages[0], entry+":") {
		return errors.New(e.Messages[0])
	}
	return e
}

func loaderFor(p string) api.Loader {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".ts", ".mts", ".cts":
		return api.LoaderTS
	case ".json":
		return api.LoaderJSON
	}
	return api.LoaderJS
}

// readSource reads one file of a tool: never through a link, never a FIFO
// or a device, only a file of this user that no one else may write (a
// file another user planted would otherwise run as this one), and not
// more than [MaxFileSize].
func readSource(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link: a tool file is read only as itself", p)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := CheckOwner(p, fi); err != nil {
		return nil, err
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, MaxFileSize)
	}
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// CheckOwner refuses what a tool's file must not be: anything but a
// regular file or directory, one another user owns, or one others may
// write.
func CheckOwner(p string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s may be written by other users (mode %v)", p, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to user %d, not to this user (%d)", p, st.Uid, os.Geteuid())
	}
	return nil
}

// checkCacheDir refuses a cache that another user, or a tool through the
// workspace, could write: what is in it runs as lathe.
func checkCacheDir(dir, workspace string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("the JavaScript cache %s is not an absolute path", dir)
	}
	if workspace != "" {
		ws, err := filepath.EvalSymlinks(workspace)
		if err != nil {
			return err
		}
		if in, err := statedir.Inside(dir, ws); err != nil || in {
			return fmt.Errorf("the JavaScript cache %s lies in the workspace, where a tool could write code that lathe would run", dir)
		}
	}
	return statedir.MkdirAll(dir, "JavaScript cache")
}

// entryRecord is one cached bundle.
type entryRecord struct {
	Version   string        `json:"version"`
	Inputs    []inputRecord `json:"inputs"`
	Code      string        `json:"code"`
	SourceMap string        `json:"sourceMap"`
}

type inputRecord struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// cacheKey names the record of a tool file with these bytes: the imports
// are checked against the record, since which files are imported is known
// only from the file.
func cacheKey(entry, root string, data []byte, node bool) string {
	return sum([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%v\x00%s", version, root, entry, node, sum(data))))
}

// lookup returns the cached bundle of entry when every file it was built
// from still has the bytes it had. Anything amiss is a miss.
func lookup(dir, key, entry string, entryData []byte) *Result {
	b, err := statedir.ReadPrivate(filepath.Join(dir, key+".json"), 64<<20)
	if err != nil {
		return nil
	}
	var rec entryRecord
	if json.Unmarshal(b, &rec) != nil || rec.Version != version || len(rec.Inputs) == 0 || rec.Inputs[0].Path != entry {
		return nil
	}
	r := &Result{Code: []byte(rec.Code), SourceMap: []byte(rec.SourceMap), Cached: true}
	for i, in := range rec.Inputs {
		data := entryData
		if i > 0 {
			if data, err = readSource(in.Path); err != nil {
				return nil
			}
		}
		if sum(data) != in.SHA256 {
			return nil
		}
		r.Inputs = append(r.Inputs, Input{Path: in.Path, Data: data})
	}
	return r
}

// store writes the record of r under key, whole or not at all.
func store(dir, key string, r *Result) error {
	rec := entryRecord{Version: version, Code: string(r.Code), SourceMap: string(r.SourceMap)}
	for _, in := range r.Inputs {
		rec.Inputs = append(rec.Inputs, inputRecord{Path: in.Path, SHA256: sum(in.Data)})
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return statedir.WriteFile(filepath.Join(dir, key+".json"), b)
}
