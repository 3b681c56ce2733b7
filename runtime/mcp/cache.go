package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lathe-tools/lathe/internal/childenv"
	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/tool"
)

// ToolCache keeps each server's tool list between runs, so that opening a
// [Pool] starts no server whose list it holds: the tools are registered
// from the cache and the server starts at the first call of one of them.
// A server that, once started, lists other tools than the cache said has
// its tools replaced in the engine and in the cache, as after
// notifications/tools/list_changed. Beside the tools the cache keeps what
// the server offers besides them (its capabilities, resources, templates
// and prompts), so that [Pool.Features] and [Pool.Catalog] start no server
// it holds (see surfacecache.go).
//
// An entry is keyed by what makes the server what it is: its name,
// command or URL, working directory, headers, Allow and Deny, the whole
// environment the command gets (so a changed variable asks the server
// again), and the path, size and modification time of its program and of
// every argument that names a file. The file holds a hash of that key, not
// the key: headers and environment may hold secrets.
//
// What the cache says decides which tools are offered and what they claim
// (a read-only annotation lets a call through a policy), so a file is used
// only when nobody else could have written it: the directory and the file
// must belong to this user and be writable by no one else, the file must
// be a regular file (not a link), and every tool in it must pass the
// checks a listed tool passes (its name, Allow and Deny, its schemas).
// Anything else is not an error: the entry is ignored and the server is
// asked, as if there were none. The loader keeps the cache outside the
// workspace, where a confined tool cannot write.
type ToolCache struct {
	dir string
}

// NewToolCache returns a cache that keeps its files in dir, created with
// mode 0700 when first written to.
func NewToolCache(dir string) *ToolCache { return &ToolCache{dir: dir} }

// Dir returns the cache's directory.
func (c *ToolCache) Dir() string { return c.dir }

// toolCacheVersion changes when the file's meaning does, so that files of
// another version of lathe are not read.
const toolCacheVersion = 1

// maxToolCacheFile bounds a cache file read: a server's list is far
// smaller, and a larger file is no entry lathe wrote.
const maxToolCacheFile = 32 << 20

type toolCacheFile struct {
	Version int              `json:"version"`
	Key     string           `json:"key"`
	Tools   []toolCacheEntry `json:"tools"`
}

// toolCacheEntry is what the cache keeps of a tool: only what the server
// said of it. Everything else (its source, runtime, summary, timeout) is
// made again from the configuration when it is read.
type toolCacheEntry struct {
	Upstream     string           `json:"upstream"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  tool.Annotations `json:"annotations,omitzero"`
}

// identity returns the name of the server's file and the hash of its key.
// It reports false when the program cannot be found: starting it will say
// why.
func (cfg *Config) identity() (file, key string, ok bool) {
	idb, err := json.Marshal(struct {
		Name    string   `json:"name"`
		Command []string `json:"command,omitempty"`
		URL     string   `json:"url,omitempty"`
		Dir     string   `json:"dir,omitempty"`
	}{cfg.Name, cfg.Command, cfg.URL, cfg.Dir})
	if err != nil {
		return "", "", false
	}
	var (
		env   []string
		files []process.FileID
	)
	if len(cfg.Command) > 0 {
		env = childenv.Build(cfg.PassEnv, cfg.Env)
		slices.Sort(env)
		prog, err := lookProgram(cfg.Command[0], cfg.Dir, env)
		if err != nil {
			return "", "", false
		}
		files = process.CommandFiles(prog, cfg.Command[1:], cfg.Dir)
	}
	headers := make([]string, 0, len(cfg.Headers))
	for k, v := range cfg.Headers {
		headers = append(headers, k+"\x00"+v)
	}
	slices.Sort(headers)
	kb, err := json.Marshal(struct {
		Version int              `json:"version"`
		ID      string           `json:"id"`
		Env     []string         `json:"env,omitempty"`
		Headers []string         `json:"headers,omitempty"`
		Allow   []string         `json:"allow,omitempty"`
		Deny    []string         `json:"deny,omitempty"`
		Files   []process.FileID `json:"files,omitempty"`
	}{toolCacheVersion, string(idb), env, headers, cfg.Allow, cfg.Deny, files})
	if err != nil {
		return "", "", false
	}
	fsum := sha256.Sum256(idb)
	ksum := sha256.Sum256(kb)
	return hex.EncodeToString(fsum[:16]) + ".json", hex.EncodeToString(ksum[:]), true
}

// lookProgram finds the program a command runs, as the command itself
// would: a name with a slash relative to dir, else through the PATH of the
// environment it gets.
func lookProgram(prog, dir string, env []string) (string, error) {
	if strings.ContainsRune(prog, '/') {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
		}
		return prog, nil
	}
	for _, kv := range env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(path) {
				if d == "" || !filepath.IsAbs(d) {
					continue
				}
				p := filepath.Join(d, prog)
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					return p, nil
				}
			}
		}
	}
	return exec.LookPath(prog)
}

// load returns the server's tools as the cache holds them, or an error
// that says why there is no entry to use (fs.ErrNotExist when there is
// none at all).
func (c *ToolCache) load(s *server) ([]upTool, error) {
	file, key, ok := s.cfg.identity()
	if !ok {
		return nil, errors.New("the server's program cannot be found")
	}
	if err := statedir.CheckDir(c.dir, "MCP tool cache"); err != nil {
		return nil, err
	}
	b, err := statedir.ReadPrivate(filepath.Join(c.dir, file), maxToolCacheFile)
	if err != nil {
		return nil, err
	}
	var f toolCacheFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("cache file %s: %w", file, err)
	}
	if f.Version != toolCacheVersion || f.Key != key {
		return nil, errors.New("the entry is of another configuration or program")
	}
	tools := make([]upTool, 0, len(f.Tools))
	seen := map[string]bool{}
	for _, ct := range f.Tools {
		if ct.Upstream == "" || seen[ct.Upstream] {
			return nil, fmt.Errorf("cache file %s: a tool without a name, or twice", file)
		}
		seen[ct.Upstream] = true
		ut, err := s.cached(ct)
		if err != nil {
			return nil, fmt.Errorf("cache file %s: tool %q: %w", file, ct.Upstream, err)
		}
		tools = append(tools, ut)
	}
	slices.SortFunc(tools, func(a, b upTool) int { return strings.Compare(a.upstream, b.upstream) })
	return tools, nil
}

// cached makes a tool of a cache entry with the checks a listed tool
// passes (see [server.convert]).
func (s *server) cached(ct toolCacheEntry) (upTool, error) {
	if !s.cfg.allowed(ct.Upstream) {
		return upTool{}, errors.New("the server's allow and deny patterns leave it out")
	}
	name := validName(ct.Upstream)
	if !tool.ValidName(s.cfg.prefix() + name) {
		return upTool{}, fmt.Errorf("%q is not a valid tool name", s.cfg.prefix()+name)
	}
	def := tool.Definition{
		Name:         name,
		Summary:      summaryOf(ct.Description),
		Description:  ct.Description,
		InputSchema:  ct.InputSchema,
		OutputSchema: ct.OutputSchema,
		Annotations:  ct.Annotations,
		Source:       "mcp." + s.cfg.Name,
		Runtime:      RuntimeName,
	}
	if _, err := schema.Prepare(def.InputSchema); err != nil {
		return upTool{}, fmt.Errorf("input schema: %w", err)
	}
	if len(def.OutputSchema) > 0 {
		if _, err := schema.Prepare(def.OutputSchema); err != nil {
			return upTool{}, fmt.Errorf("output schema: %w", err)
		}
	}
	return upTool{upstream: ct.Upstream, tool: tool.Tool{Definition: def, Runtime: s.pool, Timeout: s.cfg.Timeout}}, nil
}

// store writes the server's tools to the cache. A cache that cannot be
// written is no error: the next run asks the server again.
func (c *ToolCache) store(s *server, tools []upTool) error {
	file, key, ok := s.cfg.identity()
	if !ok {
		return nil
	}
	f := toolCacheFile{Version: toolCacheVersion, Key: key, Tools: make([]toolCacheEntry, 0, len(tools))}
	for _, ut := range tools {
		d := &ut.tool.Definition
		f.Tools = append(f.Tools, toolCacheEntry{Upstream: ut.upstream, Description: d.Description,
			InputSchema: d.InputSchema, OutputSchema: d.OutputSchema, Annotations: d.Annotations})
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := statedir.MkdirAll(c.dir, "MCP tool cache"); err != nil {
		return err
	}
	return statedir.WriteFile(filepath.Join(c.dir, file), b)
}

// Clear removes every cached tool list, and the catalog kept beside it,
// and returns how many servers' lists it removed.
func (c *ToolCache) Clear() (int, error) {
	catalogs, _ := filepath.Glob(filepath.Join(c.dir, "*.surface.json"))
	n, err := statedir.ClearJSON(c.dir, ".record-")
	return max(0, n-len(catalogs)), err
}
