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

// idleCompare alternates floorOp and engineOp, one at a time, each followed
// by a pause in which the work an operation left to other goroutines ends.
// It reports the median wall time of each side's operations alone
// (floor-ns/op, engine-ns/op, engine/floor) and the processor time of each
// operation with its pause (floor-cpu-ns/op, engine-cpu-ns/op,
// cpu-engine/floor), so that work moved off the call is still counted. The
// processor time of a pause alone (waking from it, the runtime's own
// work), measured the same way between them, is taken off both sides
// (idle-cpu-ns/op), so that it does not bring the ratio closer to 1.
func idleCompare(b *testing.B, floorOp, engineOp func()) {
	const pause = 10 * time.Millisecond
	floorOp()
	engineOp()
	time.Sleep(pause)
	var floorCPU, engineCPU, idleCPU time.Duration
	floorT := make([]time.Duration, 0, b.N)
	engineT := make([]time.Duration, 0, b.N)
	var idleT []time.Duration
	one := func(op func(), ts *[]time.Duration, cpu *time.Duration) {
		c0 := cpuUsed()
		t0 := time.Now()
		op()
		*ts = append(*ts, time.Since(t0))
		time.Sleep(pause)
		*cpu += cpuUsed() - c0
	}
	b.ResetTimer()
	for range b.N {
		one(floorOp, &floorT, &floorCPU)
		one(func() {}, &idleT, &idleCPU)
		one(engineOp, &engineT, &engineCPU)
	}
	b.StopTimer()
	mf, me := median(floorT), median(engineT)
	b.ReportMetric(float64(mf.Nanoseconds()), "floor-ns/op")
	b.ReportMetric(float64(me.Nanoseconds()), "engine-ns/op")
	b.ReportMetric(float64(me)/float64(mf), "engine/floor")
	n := float64(b.N)
	b.ReportMetric(float64(idleCPU.Nanoseconds())/n, "idle-cpu-ns/op")
	b.ReportMetric(float64((floorCPU-idleCPU).Nanoseconds())/n, "floor-cpu-ns/op")
	b.ReportMetric(float64((engineCPU-idleCPU).Nanoseconds())/n, "engine-cpu-ns/op")
	b.ReportMetric(float64(engineCPU-idleCPU)/float64(floorCPU-idleCPU), "cpu-engine/floor")
}

// selfCPU returns the processor time of this process alone so far: its
// threads, none of its children.
func selfCPU() time.Duration {
	var self syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano())
}
