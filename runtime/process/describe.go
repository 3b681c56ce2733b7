package process

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lathe-tools/lathe/internal/tail"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/tool"
)

// ErrNoSchema is matched (errors.Is) by the error of a binary that does not
// answer the schema action.
var ErrNoSchema = errors.New("the tool does not describe itself")

// CacheDirEnv names the environment variable that moves lathe's cache
// directory; schemas are kept in its "schemas" subdirectory.
const CacheDirEnv = "LATHE_CACHE_DIR"

// DefaultCacheDir returns where schemas are cached: $LATHE_CACHE_DIR/schemas
// when the variable is set, otherwise lathe/schemas in the user's cache
// directory (os.UserCacheDir). It returns "" when there is no such place.
func DefaultCacheDir() string {
	if dir := os.Getenv(CacheDirEnv); dir != "" {
		return filepath.Join(dir, "schemas")
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "lathe", "schemas")
}

// Describe runs cmd with the schema action and returns the definitions of
// the tools it holds. It runs the binary as a [Runtime] made with opts runs
// a call: opts.Options go in the request's context, and its Sandbox,
// MaxOutputBytes, GracePeriod and Logger apply, so that a binary whose
// calls are confined is confined while it describes itself too. A Sandbox
// error fails discovery: the binary never runs unconfined. opts.Tool is
// not used, and nil opts are the zero [Options]. A binary that does not
// answer gives an error matching [ErrNoSchema].
func Describe(ctx context.Context, cmd Command, opts *Options) ([]protocol.ToolSchema, error) {
	if cmd.Shell {
		return nil, errors.New("a shell command cannot describe itself; declare its parameters")
	}
	if t, err := parseTemplate(cmd.Argv, false); err != nil {
		return nil, err
	} else if len(t.names) > 0 {
		return nil, fmt.Errorf("a command with placeholders (%s) cannot describe itself; declare its parameters", "{"+strings.Join(t.names, "}, {")+"}")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Tool = ""
	r, err := New(cmd, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	def := &tool.Definition{Name: "schema"}
	req, err := protocol.NewRequest(&protocol.Request{
		Action:  protocol.ActionSchema,
		Context: protocol.Context{Root: cmd.Dir, Options: o.Options},
	})
	if err != nil {
		return nil, err
	}
	res, err := r.run(ctx, def, cmd.Argv, req)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && te.Err != nil {
			return nil, te.Err
		}
		return nil, err
	}
	return SchemaAnswer(res.stdout, res.exitText(), res.stderr)
}

// Cache remembers what binaries said of themselves, so that loading the
// configuration does not start every tool each time: in memory for its own
// life, and on disk in a directory, keyed by the command line and by the
// path, size and modification time of the program and of every file the
// command names, so that rebuilding or editing a tool asks it again.
type Cache struct {
	dir string
	mu  sync.Mutex
	mem map[string][]protocol.ToolSchema
}

// NewCache returns a cache that keeps its files in dir; "" keeps nothing on
// disk.
func NewCache(dir string) *Cache {
	return &Cache{dir: dir, mem: map[string][]protocol.ToolSchema{}}
}

// Dir returns the cache's directory, "" when it keeps nothing on disk.
func (c *Cache) Dir() string { return c.dir }

// cacheFile is what one file of the cache holds.
type cacheFile struct {
	Key   string                `json:"key"`
	Tools []protocol.ToolSchema `json:"tools"`
}

// Describe is [Describe] through the cache. The entry is keyed by the
// command and opts.Options, not by the sandbox: an answer found in the
// cache runs nothing, so it needs none.
func (c *Cache) Describe(ctx context.Context, cmd Command, opts *Options) ([]protocol.ToolSchema, error) {
	var options map[string]any
	if opts != nil {
		options = opts.Options
	}
	return c.DescribeWith(ctx, cmd, options, func(ctx context.Context) ([]protocol.ToolSchema, error) {
		return Describe(ctx, cmd, opts)
	})
}

// DescribeWith is [Cache.Describe] for a runtime that asks the binary its
// own way (a VFS tool asks it confined, with no workspace): describe runs
// only when the cache holds no entry for cmd and options, and its answer
// is kept.
func (c *Cache) DescribeWith(ctx context.Context, cmd Command, options map[string]any,
	describe func(context.Context) ([]protocol.ToolSchema, error)) ([]protocol.ToolSchema, error) {
	id, key, ok := cacheKey(cmd, options)
	if !ok {
		return describe(ctx)
	}
	c.mu.Lock()
	tools, hit := c.mem[key]
	c.mu.Unlock()
	if hit {
		return tools, nil
	}
	if tools, hit = c.load(id, key); hit {
		c.remember(key, tools)
		return tools, nil
	}
	tools, err := describe(ctx)
	if err != nil {
		return nil, err
	}
	c.remember(key, tools)
	c.store(id, key, tools)
	return tools, nil
}

func (c *Cache) remember(key string, tools []protocol.ToolSchema) {
	c.mu.Lock()
	c.mem[key] = tools
	c.mu.Unlock()
}

// file names the cache file of a command: one per command, so that the
// entry of a tool that changed is replaced rather than left behind.
func (c *Cache) file(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".json")
}

// maxCacheFile bounds a cache file read: a binary's schemas are far
// smaller, and a larger file is no entry lathe wrote.
const maxCacheFile = 32 << 20

// load reads the entry of a command. What a binary said of itself decides
// the tools offered and what they claim (a read-only annotation lets a call
// through the default policy), so a file is read only when nobody else
// could have written it: the directory and the file belong to this user
// and are writable by no one else, and the file is a regular file, not a
// link. Anything else is no entry, and the binary is asked again.
func (c *Cache) load(id, key string) ([]protocol.ToolSchema, bool) {
	if c.dir == "" || statedir.CheckDir(c.dir, "schema cache") != nil {
		return nil, false
	}
	b, err := statedir.ReadPrivate(c.file(id), maxCacheFile)
	if err != nil {
		return nil, false
	}
	var f cacheFile
	if json.Unmarshal(b, &f) != nil || f.Key != key {
		return nil, false
	}
	return f.Tools, true
}

// store writes the entry atomically: to a temporary file, renamed into
// place, so that a concurrent lathe never reads half a file. A cache that
// cannot be written is no error; the next run asks the tool again.
func (c *Cache) store(id, key string, tools []protocol.ToolSchema) {
	if c.dir == "" {
		return
	}
	b, err := json.Marshal(cacheFile{Key: key, Tools: tools})
	if err != nil || statedir.MkdirAll(c.dir, "schema cache") != nil {
		return
	}
	f, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), c.file(id)) != nil {
		os.Remove(f.Name())
	}
}

// Clear forgets every cached schema, in memory and on disk, and returns how
// many files it removed.
func (c *Cache) Clear() (int, error) {
	c.mu.Lock()
	c.mem = map[string][]protocol.ToolSchema{}
	c.mu.Unlock()
	if c.dir == "" {
		return 0, nil
	}
	return statedir.ClearJSON(c.dir, ".tmp-")
}

// cacheKey identifies what a binary would say of itself. id names the
// command: its command line, workspace, environment and options. key adds
// the identity (path, size, modification time) of the program and of every
// argument that names a file, such as the script an interpreter runs. It
// reports false when the program cannot be found, so that the error comes
// from running it.
func cacheKey(cmd Command, options map[string]any) (id, key string, ok bool) {
	prog, err := resolve(cmd.Argv[0], cmd.Dir)
	if err != nil {
		return "", "", false
	}
	files := CommandFiles(prog, cmd.Argv[1:], cmd.Dir)
	idb, err := json.Marshal(struct {
		Protocol int            `json:"protocol"`
		Argv     []string       `json:"argv"`
		Dir      string         `json:"dir"`
		Env      []string       `json:"env,omitempty"`
		Options  map[string]any `json:"options,omitempty"`
	}{protocol.Version, cmd.Argv, cmd.Dir, cmd.Env, options})
	if err != nil {
		return "", "", false
	}
	fb, err := json.Marshal(files)
	if err != nil {
		return "", "", false
	}
	return string(idb), string(idb) + string(fb), true
}

// FileID identifies a file a command runs or reads by its path, size and
// modification time: a cached answer about the command holds while these
// do.
type FileID struct {
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"`
}

// CommandFiles returns the identity of the program prog (already found)
// and of every argument of args that names a regular file, relative ones
// taken from dir, such as the script an interpreter runs. A cache of what
// a command says keys its entries by these, so that a rebuilt program or
// an edited script is asked again.
func CommandFiles(prog string, args []string, dir string) []FileID {
	var files []FileID
	add := func(path string) {
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			files = append(files, FileID{path, fi.Size(), fi.ModTime().UnixNano()})
		}
	}
	add(prog)
	for _, a := range args {
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		if !filepath.IsAbs(a) {
			a = filepath.Join(dir, a)
		}
		add(a)
	}
	return files
}

// SchemaAnswer reads the answer of a tool asked for its schema: its
// standard output, how it ended and the end of its standard error, for the
// message. An output that is no schema answer gives an error matching
// [ErrNoSchema]; an answer listing a tool without a name, or one twice, is
// refused whole. Every runtime that asks a tool on the protocol (process,
// vfs, wasm) reads the answer here.
func SchemaAnswer(stdout []byte, exit string, stderr []byte) ([]protocol.ToolSchema, error) {
	ans, err := protocol.ParseSchema(stdout)
	if err != nil {
		return nil, fmt.Errorf("%w: asked for its schema, %v (%s)%s", ErrNoSchema, err, exit, tail.StderrNote(stderr))
	}
	seen := make(map[string]bool, len(ans.Tools))
	for i, t := range ans.Tools {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("its schema answer lists a tool without a name (number %d)", i+1)
		case seen[t.Name]:
			return nil, fmt.Errorf("its schema answer lists the tool %q twice", t.Name)
		}
		seen[t.Name] = true
	}
	return ans.Tools, nil
}
