package load

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/runtime/js/transpile"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/runtime/vfs"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/trust"
)

// ToolsDir is the directory of a workspace's JavaScript and TypeScript
// tools, inside lathe's state directory (which no tool of lathe's sees).
const ToolsDir = ".lathe/tools"

// ManifestFile names the manifest of a packaged tool.
const ManifestFile = "tool.json"

// NodeRuntime is the runtime of a packaged tool whose manifest says
// runtime "node".
const NodeRuntime = "node"

//go:embed jsnode/shim.js
var nodeShim []byte

// jsExts are the extensions of single-file tools.
var jsExts = []string{".ts", ".js", ".mts", ".mjs"}

// toolsDir is one directory tools are found in.
type toolsDir struct {
	Path string
	// Workspace says it is the workspace's own: its tools win a clash.
	Workspace bool
}

// jsFile is one tool found in a tools directory, before it is built.
type jsFile struct {
	Name string
	// File is what a person trusts: NAME.ts, or the manifest of a
	// packaged tool.
	File string
	// Entry is the file the tool's code starts at.
	Entry string
	// Root is the directory all of the tool's files lie in.
	Root     string
	Manifest *Manifest
	// ManifestData are the manifest's bytes as read.
	ManifestData []byte
}

// Manifest is a packaged tool's tool.json.
type Manifest struct {
	Name         string                `json:"name"`
	Description  string                `json:"description"`
	InputSchema  json.RawMessage       `json:"inputSchema"`
	OutputSchema json.RawMessage       `json:"outputSchema,omitempty"`
	Annotations  *tool.Annotations     `json:"annotations,omitempty"`
	Permissions  *protocol.Permissions `json:"permissions,omitempty"`
	// Runtime is "js" (the embedded engine, the default) or "node".
	Runtime string `json:"runtime,omitempty"`
	// Entry is the tool's code, relative to the manifest's directory.
	Entry string `json:"entry"`
}

// toolsDirs returns the directories tools are found in, the workspace's
// first: .lathe/tools of the workspace, tools/ beside the user's config
// file, and the directories of the configuration's tools_dirs.
func toolsDirs(ws string, cfg *config.Config) []toolsDir {
	dirs := []toolsDir{{Path: filepath.Join(ws, filepath.FromSlash(ToolsDir)), Workspace: true}}
	if uf := config.UserFile(); uf != "" {
		dirs = append(dirs, toolsDir{Path: filepath.Join(filepath.Dir(uf), "tools")})
	}
	for _, d := range cfg.ToolsDirs {
		dirs = append(dirs, toolsDir{Path: d})
	}
	return dirs
}

// scanTools finds the tools of one directory: NAME.ts / NAME.js files and
// subdirectories holding a tool.json. The directory, and each tool's own
// directory, must be this user's and writable by no one else; a link is
// refused, never followed (it could lead the name to another user's file).
func scanTools(dir string) ([]jsFile, []error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{err}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, []error{fmt.Errorf("the tools directory %s is a symbolic link; lathe reads tools only from a directory of its own", dir)}
	}
	if !fi.IsDir() {
		return nil, []error{fmt.Errorf("the tools directory %s is not a directory", dir)}
	}
	if err := transpile.CheckOwner(dir, fi); err != nil {
		return nil, []error{fmt.Errorf("the tools directory: %w", err)}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, []error{err}
	}
	var out []jsFile
	var errs []error
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			errs = append(errs, fmt.Errorf("%s is a symbolic link: a tool is read only as itself, never through a link", p))
			continue
		}
		if e.IsDir() {
			mf := filepath.Join(p, ManifestFile)
			if _, err := os.Lstat(mf); err != nil {
				continue
			}
			f, err := readManifest(p, mf)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, f)
			continue
		}
		ext := filepath.Ext(e.Name())
		if !slices.Contains(jsExts, ext) || strings.HasSuffix(e.Name(), ".d.ts") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ext)
		if !tool.ValidName(name) {
			errs = append(errs, fmt.Errorf("%s: %q is not a tool name: it must match %s", p, name, tool.NamePattern))
			continue
		}
		out = append(out, jsFile{Name: name, File: p, Entry: p, Root: dir})
	}
	return out, errs
}

// readManifest reads and checks the tool.json of the packaged tool in dir.
func readManifest(dir, mf string) (jsFile, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return jsFile{}, err
	}
	if err := transpile.CheckOwner(dir, fi); err != nil {
		return jsFile{}, err
	}
	data, err := readOwn(mf)
	if err != nil {
		return jsFile{}, err
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return jsFile{}, fmt.Errorf("%s: %v", mf, err)
	}
	if m.Name == "" {
		m.Name = filepath.Base(dir)
	}
	switch {
	case !tool.ValidName(m.Name):
		return jsFile{}, fmt.Errorf("%s: name %q is not a tool name: it must match %s", mf, m.Name, tool.NamePattern)
	case m.Entry == "":
		return jsFile{}, fmt.Errorf("%s: entry is missing: name the file of the tool's code", mf)
	case filepath.IsAbs(m.Entry) || !statedir.Within(dir, filepath.Join(dir, m.Entry)):
		return jsFile{}, fmt.Errorf("%s: entry %s lies outside the tool's directory", mf, m.Entry)
	case m.Runtime != "" && m.Runtime != "js" && m.Runtime != NodeRuntime:
		return jsFile{}, fmt.Errorf("%s: runtime %q: a packaged tool runs in \"js\" (the embedded engine, the default) or \"node\"", mf, m.Runtime)
	case len(m.InputSchema) == 0 && m.Runtime == NodeRuntime:
		return jsFile{}, fmt.Errorf("%s: inputSchema is missing: a node tool is described by its manifest alone", mf)
	}
	return jsFile{Name: m.Name, File: mf, Entry: filepath.Join(dir, m.Entry), Root: dir, Manifest: &m, ManifestData: data}, nil
}

// readOwn reads a file of a tool under the rules of transpile: no link,
// only a regular file of this user that no one else may write.
func readOwn(p string) ([]byte, error) {
	f, fi, err := statedir.Open(p)
	if err != nil {
		if strings.Contains(err.Error(), "too many levels of symbolic links") {
			return nil, fmt.Errorf("%s is a symbolic link: a tool file is read only as itself", p)
		}
		return nil, err
	}
	defer f.Close()
	if err := transpile.CheckOwner(p, fi); err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory", p)
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}

// builtJS is a tool found and built: its code and what a person trusts.
type builtJS struct {
	jsFile
	Result *transpile.Result
	// TrustText is what is checked against the trust store: the manifest,
	// if any, and every file the code was built from, each with its hash;
	// the files of node_modules by hash alone.
	TrustText []byte
}

// buildJS builds the tool f: the bytes it returns are the bytes checked
// for trust and, once trusted, run.
func buildJS(f jsFile, ws, cacheDir string) (*builtJS, error) {
	node := f.Manifest != nil && f.Manifest.Runtime == NodeRuntime
	r, err := transpile.Build(f.Entry, transpile.Options{Root: f.Root, CacheDir: cacheDir, Workspace: ws, Node: node})
	if err != nil {
		return nil, err
	}
	var t bytes.Buffer
	if f.Manifest != nil {
		fmt.Fprintf(&t, "== %s (sha256 %s)\n%s\n", f.File, trust.Sum(f.ManifestData), f.ManifestData)
	}
	for _, in := range r.Inputs {
		if strings.Contains(in.Path, string(filepath.Separator)+"node_modules"+string(filepath.Separator)) {
			fmt.Fprintf(&t, "== %s (sha256 %s, a dependency)\n", in.Path, trust.Sum(in.Data))
			continue
		}
		fmt.Fprintf(&t, "== %s (sha256 %s)\n%s\n", in.Path, trust.Sum(in.Data), in.Data)
	}
	return &builtJS{jsFile: f, Result: r, TrustText: t.Bytes()}, nil
}

// IsToolFile reports whether file is a tool file by its name: a .ts or
// .js file, or a tool.json manifest.
func IsToolFile(file string) bool {
	return filepath.Base(file) == ManifestFile || slices.Contains(jsExts, filepath.Ext(file)) && !strings.HasSuffix(file, ".d.ts")
}

// ToolTrustText returns what trusting the tool file (NAME.ts, or a
// packaged tool's tool.json) records: the manifest, if any, and every file
// the tool is built from, each with its SHA-256. lathe trust records it
// as the file's trust, which [Open] checks.
func ToolTrustText(workspace, file string) ([]byte, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	var f jsFile
	if filepath.Base(abs) == ManifestFile {
		if f, err = readManifest(filepath.Dir(abs), abs); err != nil {
			return nil, err
		}
	} else {
		f = jsFile{Name: strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs)), File: abs, Entry: abs, Root: filepath.Dir(abs)}
	}
	b, err := buildJS(f, workspace, transpile.DefaultCacheDir())
	if err != nil {
		return nil, err
	}
	return b.TrustText, nil
}

// loadJS registers the tools of the tools directories: each found, built,
// checked for trust (asking [Options].Trust when it can) and, once
// trusted, registered. A tool of the workspace wins over one of the same
// name elsewhere, and the clash is reported.
func (w *Workspace) loadJS(ctx context.Context, opts *Options, known map[string]bool) error {
	cfg := w.Config
	found := w.findJS(opts.warn, known)
	if len(found) == 0 {
		return nil
	}
	store, storeErr := trustStore()
	cacheDir := transpile.DefaultCacheDir()
	l := &localLoader{ctx: ctx, cfg: cfg, ws: w.Dir, log: opts.Logger}
	var errs []error
	for _, f := range found {
		// A tool left out is still no typo in a [tools.NAME] table.
		known[f.Name] = true
		b, err := buildJS(f, w.Dir, cacheDir)
		if err != nil {
			opts.warn(fmt.Errorf("the tool %s is left out: %w", f.Name, err))
			continue
		}
		ok, err := w.trustJS(ctx, opts, store, storeErr, b)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		t, err := l.jsTool(b, cacheDir)
		if err != nil {
			opts.warn(fmt.Errorf("the tool %s is left out: %w", f.Name, err))
			continue
		}
		if !cfg.Apply(&t) {
			t.Runtime.(tool.Closer).Close()
			continue
		}
		if err := w.Engine.Register(t); err != nil {
			errs = append(errs, err)
		}
	}
	for _, h := range l.hosts {
		errs = append(errs, w.Engine.Own(h))
	}
	for name, p := range l.declared {
		if w.Declared == nil {
			w.Declared = map[string]host.Permissions{}
		}
		w.Declared[name] = p
	}
	if len(w.Untrusted) > 0 && opts.RequireTrust {
		return &TrustError{Untrusted: w.Untrusted, Err: fmt.Errorf("the tool file %s needs trust", w.Untrusted[len(w.Untrusted)-1].File)}
	}
	return errors.Join(errs...)
}

// findJS returns the tool files of the tools directories, the first of
// each name, leaving out the names known already and warning of both.
func (w *Workspace) findJS(warn func(error), known map[string]bool) []jsFile {
	var found []jsFile
	where := map[string]string{}
	for _, d := range toolsDirs(w.Dir, w.Config) {
		files, errs := scanTools(d.Path)
		for _, err := range errs {
			warn(err)
		}
		for _, f := range files {
			if prev, ok := where[f.Name]; ok {
				warn(fmt.Errorf("the tool %s of %s is used; %s defines one of the same name, left out", f.Name, prev, f.File))
				continue
			}
			if known[f.Name] {
				warn(fmt.Errorf("%s defines the tool %s, which is already defined; it is left out", f.File, f.Name))
				continue
			}
			where[f.Name] = f.File
			found = append(found, f)
		}
	}
	return found
}

// UntrustedTools returns the tool files of w's tools directories that are
// not trusted as they are now: the ones [Open] would leave out (or ask
// about). It builds each tool as Open does (through the transpile cache)
// but runs none and asks nobody, for the commands that only read the
// configuration ([ReadConfig]) and yet say what trust leaves out. A tool
// that does not build is not listed: Open reports it.
func (w *Workspace) UntrustedTools() ([]Untrusted, error) {
	found := w.findJS(func(error) {}, nil)
	if len(found) == 0 {
		return nil, nil
	}
	store, err := trustStore()
	if err != nil {
		return nil, &TrustError{Err: err}
	}
	cacheDir := transpile.DefaultCacheDir()
	var out []Untrusted
	for _, f := range found {
		b, err := buildJS(f, w.Dir, cacheDir)
		if err != nil {
			continue
		}
		st, rec, err := store.Check(w.Dir, b.File, b.TrustText)
		if err != nil {
			return out, &TrustError{Err: err}
		}
		if st != trust.Trusted {
			out = append(out, untrustedJS(b, st, rec))
		}
	}
	return out, nil
}

// untrustedJS describes the tool b, whose trust is st (rec the record
// trusted before, if any), for the person who may trust it: what it would
// do, and its code or what changed in it.
func untrustedJS(b *builtJS, st trust.Status, rec *trust.Record) Untrusted {
	u := Untrusted{File: b.File, Status: st, Widenings: []config.Widening{{
		Pos: config.Pos{File: b.File}, Key: "tool " + b.Name,
		What: fmt.Sprintf("runs the JavaScript tool %s, built from %d files", b.Name, len(b.Result.Inputs)),
	}}}
	old := ""
	if rec != nil {
		old = rec.Content
	}
	u.Diff = trust.Diff(old, string(b.TrustText))
	return u
}

// trustJS says whether the tool b is trusted as it is now, asking
// [Options].Trust once when it is not; a tool left untrusted is listed in
// [Workspace].Untrusted.
func (w *Workspace) trustJS(ctx context.Context, opts *Options, store *trust.Store, storeErr error, b *builtJS) (bool, error) {
	if storeErr != nil {
		return false, &TrustError{Err: storeErr}
	}
	st, rec, err := store.Check(w.Dir, b.File, b.TrustText)
	if err != nil {
		return false, &TrustError{Err: err}
	}
	if st == trust.Trusted {
		return true, nil
	}
	// The person sees the code: what changed, or the whole of a new tool.
	u := untrustedJS(b, st, rec)
	if opts.Trust != nil {
		ok, err := opts.Trust(ctx, u)
		if err != nil {
			return false, err
		}
		if ok {
			if err := store.Trust(w.Dir, b.File, b.TrustText); err != nil {
				return false, &TrustError{Err: err}
			}
			return true, nil
		}
	}
	w.Untrusted = append(w.Untrusted, u)
	return false, nil
}

// jsTool makes the runtime of a trusted tool.
func (l *localLoader) jsTool(b *builtJS, cacheDir string) (tool.Tool, error) {
	var perms config.HostPermissions
	var profile config.SandboxProfile
	if t := l.cfg.Tools[b.Name]; t != nil {
		perms, profile = t.Permissions(), t.Profile
	}
	if b.Manifest != nil && b.Manifest.Runtime == NodeRuntime {
		return l.nodeTool(b, cacheDir, perms, profile)
	}
	return l.embeddedTool(b, cacheDir, perms, profile)
}

// nodeTool runs a packaged tool with node, as a VFS tool: node runs
// lathe's shim, which loads the tool's bundle (the entry with its
// dependencies, written to lathe's cache) and reaches the host over its
// stdio. The process sees no workspace, no network and no environment.
func (l *localLoader) nodeTool(b *builtJS, cacheDir string, perms config.HostPermissions, profile config.SandboxProfile) (tool.Tool, error) {
	if cacheDir == "" {
		return tool.Tool{}, errors.New("a node tool runs from lathe's cache directory, and there is none: set LATHE_CACHE_DIR or HOME")
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		return tool.Tool{}, fmt.Errorf(`runtime "node": %w`, err)
	}
	shim := filepath.Join(cacheDir, "node-shim-"+trust.Sum(nodeShim)[:16]+".js")
	if err := writeIfDifferent(shim, nodeShim); err != nil {
		return tool.Tool{}, err
	}
	bundle := filepath.Join(cacheDir, "node-"+b.Result.Sum()[:32]+".js")
	if err := writeIfDifferent(bundle, b.Result.Code); err != nil {
		return tool.Tool{}, err
	}
	vo, err := l.vfsOptions(profile, nil)
	if err != nil {
		return tool.Tool{}, err
	}
	vo.Tool = b.Name
	h, err := l.hostFor(b.Name, "tools."+b.Name, l.toolPos(b.Name), perms, profile)
	if err != nil {
		return tool.Tool{}, err
	}
	rt, err := vfs.New(process.Command{Argv: []string{nodeBin, shim, bundle}, Dir: l.ws}, h, vo)
	if err != nil {
		return tool.Tool{}, err
	}
	m := b.Manifest
	def := tool.Definition{Name: b.Name, Summary: summaryOf(m.Description), Description: m.Description, InputSchema: m.InputSchema,
		OutputSchema: m.OutputSchema, Source: "local", Runtime: NodeRuntime}
	if m.Annotations != nil {
		def.Annotations = *m.Annotations
	}
	l.declarePerms(b.Name, m.Permissions)
	return tool.Tool{Definition: def, Runtime: rt}, nil
}

// declarePerms records what a tool declared it needs: shown, never
// granted.
func (l *localLoader) declarePerms(name string, p *protocol.Permissions) {
	if p == nil {
		return
	}
	if l.declared == nil {
		l.declared = map[string]host.Permissions{}
	}
	l.declared[name] = host.Declared(p)
}

// writeIfDifferent places data at p in lathe's private cache, unless p
// already holds exactly it.
func writeIfDifferent(p string, data []byte) error {
	if old, err := statedir.ReadPrivate(p, int64(len(data))+1); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return statedir.WriteFile(p, data)
}
