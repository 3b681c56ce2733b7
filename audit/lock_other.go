//go:build !unix

package audit

import (
	"errors"
	"os"
)

var errLocked = errors.New("locked")

// tryLock reports every journal locked where there is no flock: a store
// cannot tell a dead process's journal from a live one's, so it replays
// none but its own (which Close writes and removes). A crash there leaves
// its journal on disk, with every record, for a person to see.
func tryLock(f *os.File) error { return errLocked }

const openFlags = 0

func owned(fi os.FileInfo) bool { return fi.Mode().IsRegular() }

// lockOwn has no lock to take.
func lockOwn(f *os.File) error { return nil }
