package par

import (
	"runtime"
	"sync/atomic"
	"testing"
)

func TestDoCallsEachIndexOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 8} {
		prev := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 3, 100, 1001} {
			counts := make([]int32, n)
			var total atomic.Int32
			Do(n, func(i int) {
				atomic.AddInt32(&counts[i], 1)
				total.Add(1)
			})
			if int(total.Load()) != n {
				t.Errorf("GOMAXPROCS %d, n %d: %d calls", procs, n, total.Load())
			}
			for i, c := range counts {
				if c != 1 {
					t.Errorf("GOMAXPROCS %d, n %d: f(%d) called %d times", procs, n, i, c)
				}
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}

func TestDoRunsConcurrently(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		prev := runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(prev)
	}
	// Each call waits for the other: this only returns if two calls run
	// at the same time.
	ready := make(chan struct{})
	Do(2, func(i int) {
		if i == 0 {
			<-ready
		} else {
			close(ready)
		}
	})
}
