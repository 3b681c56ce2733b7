//go:build !unix

package tools_test

import "errors"

func mkfifo(path string) error { return errors.New("FIFOs are a Unix thing") }
