//go:build unix

package bench

import (
	"syscall"
	"testing"
	"time"
)

// cpuCompare is compare that also reports the processor time, user and
// system, of the benchmark process and of its waited-for children per
// operation of each side (floor-cpu-ns/op, engine-cpu-ns/op) and their
// ratio (cpu-engine/floor). Processor time is what a busy machine's
// scheduling delays do not inflate, where wall time on a shared machine
// varies several times over from run to run.
func cpuCompare(b *testing.B, floorOp, engineOp func()) {
	var floorCPU, engineCPU time.Duration
	var floorN, engineN int
	timed := func(op func(), acc *time.Duration, n *int) func() {
		return func() {
			before := cpuUsed()
			op()
			*acc += cpuUsed() - before
			*n++
		}
	}
	compare(b, 1, timed(floorOp, &floorCPU, &floorN), timed(engineOp, &engineCPU, &engineN))
	b.ReportMetric(float64(floorCPU.Nanoseconds())/float64(floorN), "floor-cpu-ns/op")
	b.ReportMetric(float64(engineCPU.Nanoseconds())/float64(engineN), "engine-cpu-ns/op")
	b.ReportMetric(float64(engineCPU)/float64(floorCPU)*float64(floorN)/float64(engineN), "cpu-engine/floor")
}

// cpuUsed returns the processor time of this process and of its waited-for
// children so far.
func cpuUsed() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}
