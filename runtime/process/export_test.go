package process

// SetBeforeGroupSignal sets the function called with a process group's id
// just before a signal is sent to it, and returns what undoes it.
func SetBeforeGroupSignal(f func(pgid int)) (restore func()) {
	old := beforeGroupSignal
	beforeGroupSignal = f
	return func() { beforeGroupSignal = old }
}
