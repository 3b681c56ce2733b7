package audit

import (
	"fmt"
	"runtime/debug"
	"syscall"
)

// A journal on Linux is written through a shared mapping of its file, not
// with write(2): copying a line into the page cache this way costs a call
// no system call (two were about a twentieth of a proxied call's processor
// time), and keeps the same promise, since the pages of a shared mapping
// belong to the file and survive the death of the process that wrote them,
// as a write(2)'s bytes do. The file is given its full size with
// fallocate before it is mapped, so that no write through the mapping can
// find the disk full (which would be a SIGBUS, not an error); a file
// system that cannot allocate ahead keeps write(2).
//
// A mapped journal is its lines followed by zeros. Each line is copied
// without its newline first and the newline stored after, so a line that
// ends in a newline was copied whole; a process killed in the middle of a
// copy leaves a last line without one, which recovery skips as torn, as
// it does a partial write(2).

// mapJournal gives jf, whose header is written, a mapping of capacity
// bytes, or leaves it to write(2) with the error that kept it from one.
func (jf *jfile) mapJournal(capacity int64) error {
	fd := int(jf.f.Fd())
	if err := syscall.Fallocate(fd, 0, 0, capacity); err != nil {
		return err
	}
	m, err := syscall.Mmap(fd, 0, int(capacity), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		jf.f.Truncate(jf.size)
		return err
	}
	jf.m = m
	return nil
}

// copyLine copies line, which ends in a newline and fits, after jf's last
// line. A fault while copying (the file was cut short under the mapping by
// something other than lathe) is an error, not a crash.
func (jf *jfile) copyLine(line []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the journal %s faulted under its mapping (the file was cut short by something else than lathe): %v", jf.path, r)
		}
	}()
	n := copy(jf.m[jf.size:], line[:len(line)-1])
	jf.m[jf.size+int64(n)] = '\n'
	return nil
}

// unmap ends jf's mapping and cuts the file after its last line, so that
// what follows is written with write(2), or the file closed.
func (jf *jfile) unmap() error {
	if jf.m == nil {
		return nil
	}
	err := syscall.Munmap(jf.m)
	jf.m = nil
	if terr := jf.f.Truncate(jf.size); terr != nil && err == nil {
		err = terr
	}
	return err
}
