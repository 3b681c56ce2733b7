package plan

import (
	"fmt"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// Access is how a call uses a resource.
type Access uint8

const (
	// Read: the call looks at the resource and changes nothing.
	Read Access = 1 + iota
	// Write: the call may change the resource.
	Write
)

func (a Access) String() string {
	switch a {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("Access(%d)", uint8(a))
}

// MarshalText writes "read" or "write".
func (a Access) MarshalText() ([]byte, error) {
	if a != Read && a != Write {
		return nil, fmt.Errorf("plan: invalid access %d", uint8(a))
	}
	return []byte(a.String()), nil
}

// UnmarshalText reads "read" or "write".
func (a *Access) UnmarshalText(b []byte) error {
	switch string(b) {
	case "read":
		*a = Read
	case "write":
		*a = Write
	default:
		return fmt.Errorf("plan: invalid access %q: want read or write", b)
	}
	return nil
}

// KindPath is the kind of resource whose keys are file paths. Path keys are
// hierarchical: a path covers every path beneath it. Keys of every other kind
// are compared exactly.
const KindPath = "path"

// Resource names something calls read or write: a file, a branch, a table.
// The zero Resource is every resource there is.
type Resource struct {
	// Kind says what sort of thing Key names; empty means every kind.
	Kind string `json:"kind,omitempty"`
	// Key names one resource of Kind; empty means every resource of Kind.
	// A key of kind [KindPath] is slash-separated, relative to the workspace
	// root and clean, as [PathKey] makes it, so that the root is "".
	Key string `json:"key,omitempty"`
}

// Overlaps reports whether r and s may be the same resource, or one part of
// the other: a path and the paths beneath it overlap, and so does a resource
// with every resource of its kind and with every resource there is.
func (r Resource) Overlaps(s Resource) bool {
	switch {
	case r.Kind == "" || s.Kind == "":
		return true
	case r.Kind != s.Kind:
		return false
	case r.Key == "" || s.Key == "" || r.Key == s.Key:
		return true
	case r.Kind != KindPath:
		return false
	}
	return beneath(r.Key, s.Key) || beneath(s.Key, r.Key)
}

// beneath reports whether path key child lies strictly beneath parent.
// "a/bc" is not beneath "a/b".
func beneath(child, parent string) bool {
	return len(child) > len(parent) && child[len(parent)] == '/' && child[:len(parent)] == parent
}

func (r Resource) String() string {
	switch {
	case r.Kind == "":
		return "everything"
	case r.Key == "":
		return "every " + r.Kind
	}
	return r.Kind + " " + r.Key
}

// Use is one access of one resource by a call.
type Use struct {
	Resource
	Access Access `json:"access"`
}

func (u Use) String() string {
	return map[Access]string{Read: "reads ", Write: "writes "}[u.Access] + u.Resource.String()
}

// Effects are what one call may do, as far as other calls can tell.
type Effects struct {
	// Exclusive says that the call must run alone: it conflicts with every
	// other call, whatever either's Uses.
	Exclusive bool `json:"exclusive,omitempty"`
	// Uses lists the resources the call reads and writes. A call that is
	// not exclusive and uses nothing conflicts only with exclusive calls.
	Uses []Use `json:"uses,omitempty"`
}

// Conflicts reports whether the calls with effects e and f must not overlap
// in time, and so must run in the order the model gave: one of them is
// exclusive, or they use overlapping resources and at least one of the two
// uses is a write. Two reads never conflict.
func (e *Effects) Conflicts(f *Effects) bool {
	if e.Exclusive || f.Exclusive {
		return true
	}
	for _, u := range e.Uses {
		for _, v := range f.Uses {
			if (u.Access == Write || v.Access == Write) && u.Overlaps(v.Resource) {
				return true
			}
		}
	}
	return false
}

func (e *Effects) String() string {
	if e.Exclusive {
		return "runs alone"
	}
	if len(e.Uses) == 0 {
		return "touches nothing shared"
	}
	parts := make([]string, len(e.Uses))
	for i, u := range e.Uses {
		parts[i] = u.String()
	}
	return strings.Join(parts, ", ")
}

// foldCase says that the usual file systems of the platform compare names
// without regard to case (APFS, NTFS), so "A.txt" and "a.txt" are one file.
var foldCase = runtime.GOOS == "darwin" || runtime.GOOS == "windows"

// PathKey turns a path as a model wrote it into a key of kind [KindPath]:
// relative to the workspace root, slash-separated, free of ".", ".." and
// repeated slashes. The root itself is "", the key that covers every path.
//
// PathKey is lexical. A path it cannot place in the workspace without the
// file system (an absolute path, or one that climbs out with "..") becomes
// "" too, so that the call counts as touching every path: a needless wait,
// never a missed conflict. Where the platform's file systems fold case, so
// does the key. Symbolic links are not followed; a caller that can resolve
// them (a workspace) should do so first and hand PathKey the result.
func PathKey(p string) string {
	p = filepath.ToSlash(p)
	if path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" {
		return ""
	}
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return ""
	}
	if foldCase {
		p = strings.ToLower(p)
	}
	return p
}
