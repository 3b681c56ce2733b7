//go:build !unix

package load

// owned accepts every candidate where files have no owner lathe can read.
func owned(d, marker string) error { return nil }
