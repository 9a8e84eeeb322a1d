package main

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// speedGauge is a fixed piece of work timed, in the CPU time of the thread doing it,
// on the measured scheduler's CPU just before each run: half a million steps along a
// random cycle through 16 MiB (nearly every step a cache miss, as a scheduler's
// pointer-heavy heap has many) and hashing 1 MiB 64 times (computation on cached
// data). The work never changes, so whatever its time moves by over an invocation is
// the machine's own speed moving — other tenants of the host, its memory bandwidth,
// frequency — which no ratio between arms can cancel when it changes from one run to
// the next.
type speedGauge struct {
	next []uint32
	buf  []byte
}

const gaugeSteps = 1 << 19

func newSpeedGauge() *speedGauge {
	const n = 1 << 22 // 16 MiB of uint32
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	next := make([]uint32, n)
	for i := range n {
		next[perm[i]] = uint32(perm[(i+1)%n])
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	return &speedGauge{next: next, buf: buf}
}

// gaugeReading is one measurement: milliseconds of thread CPU time for each part.
type gaugeReading struct{ walk, hash float64 }

// measure runs the work on the scheduler's CPUs (when the bench pins) and returns its
// CPU time.
func (g *speedGauge) measure(s cpuSplit) (gaugeReading, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if s.on {
		if err := unix.SchedSetaffinity(0, &s.sched); err != nil {
			return gaugeReading{}, fmt.Errorf("moving the speed gauge to the scheduler's CPUs: %w", err)
		}
		defer func() { _ = unix.SchedSetaffinity(0, &s.rest) }()
	}
	t0 := threadCPU()
	i := uint32(0)
	for range gaugeSteps {
		i = g.next[i]
	}
	t1 := threadCPU()
	var sum [32]byte
	for range 64 {
		sum = sha256.Sum256(g.buf)
		g.buf[0] ^= sum[0]
	}
	t2 := threadCPU()
	gaugeSink += i + uint32(sum[1])
	return gaugeReading{walk: ms(t1 - t0), hash: ms(t2 - t1)}, nil
}

var gaugeSink uint32 //nolint:unused // written so that the compiler keeps the gauge's work

func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}
