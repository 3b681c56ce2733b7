package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/lathe-tools/lathe/sandbox"
)

// installTimeout bounds one npm ci.
const installTimeout = 10 * time.Minute

// InstallTools runs npm ci for each packaged tool (a directory with a
// tool.json) that has a package-lock.json, of the tools directories of the
// workspace opts name: the ones named, or all of them. npm runs under the
// standard sandbox with the tool's directory as its workspace, so that it
// writes nothing else, and with the network, which it needs to fetch the
// packages; with --ignore-scripts, so that no package's install script
// runs. Its output goes to out. A tool's files change with its
// node_modules, so a tool installed again needs a person's trust again
// before it runs.
func InstallTools(ctx context.Context, opts Options, names []string, out io.Writer) error {
	w, err := ReadConfig(ctx, opts)
	if err != nil {
		return err
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("lathe tools install runs npm ci: %w", err)
	}
	seen := map[string]bool{}
	var errs []error
	done := 0
	for _, d := range toolsDirs(w.Dir, w.Config) {
		files, scanErrs := scanTools(d.Path)
		for _, err := range scanErrs {
			opts.warn(err)
		}
		for _, f := range files {
			if f.Manifest == nil || seen[f.Name] || len(names) > 0 && !slices.Contains(names, f.Name) {
				continue
			}
			seen[f.Name] = true
			if _, err := os.Lstat(filepath.Join(f.Root, "package-lock.json")); err != nil {
				fmt.Fprintf(out, "%s: no package-lock.json in %s; nothing to install\n", f.Name, f.Root)
				continue
			}
			fmt.Fprintf(out, "%s: npm ci in %s\n", f.Name, f.Root)
			if err := npmCI(ctx, npm, f.Root, out); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f.Name, err))
				continue
			}
			done++
		}
	}
	for _, n := range names {
		if !seen[n] {
			errs = append(errs, fmt.Errorf("no packaged tool (a directory with a %s) is named %s", ManifestFile, n))
		}
	}
	if done > 0 {
		fmt.Fprintln(out, "Their files changed: lathe runs them again once you trust them (lathe trust FILE).")
	}
	return errors.Join(errs...)
}

// npmCI runs npm ci --ignore-scripts in dir, confined to it.
func npmCI(ctx context.Context, npm, dir string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	sc := sandbox.Config{Profile: sandbox.Standard, Workspace: dir, Perms: sandbox.Permissions{Network: true},
		// node reserves much address space it never uses; under the
		// sandbox's 1 GiB default it fails to start.
		Limits: sandbox.Limits{Wall: installTimeout, Memory: 4 << 30}}
	cmd.Env = sc.Env()
	cleanup, err := sc.Wrap(cmd)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci: %w", err)
	}
	return nil
}
