// Package par runs independent pieces of work on every available CPU.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Do calls f(i) for every i in [0, n), on up to GOMAXPROCS goroutines, and
// returns when every call has returned. Calls may run in any order and
// concurrently: f must only write to what index i owns (e.g. out[i]).
// With one CPU, or n < 2, the calls run in order on the caller's goroutine.
func Do(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers < 2 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			f(i)
		}
	}
	wg.Add(workers - 1)
	for range workers - 1 {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}
