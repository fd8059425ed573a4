// sonyflake-bench: Sony's Sonyflake (github.com/sony/sonyflake) beside libidgen in
// bench/bench-idgen.sh: T goroutines share one generator, as T threads share one of
// ours, for S seconds; prints one JSON line in `idgen bench --json`'s result shape.
// Sonyflake's layout caps one generator at 256 IDs per 10 ms (25,600 a second): that cap
// is part of what is compared. Machine id 1: no network lookup of a private address.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/sonyflake"
)

func main() {
	secs := flag.Float64("seconds", 2, "how long to run")
	threads := flag.Int("threads", 1, "goroutines sharing the generator")
	flag.Parse()
	sf, err := sonyflake.New(sonyflake.Settings{MachineID: func() (uint16, error) { return 1, nil }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sonyflake:", err)
		os.Exit(1)
	}
	var stop atomic.Bool
	var total, errs atomic.Uint64
	var mu sync.Mutex
	var samples []int64
	var wg sync.WaitGroup
	start := time.Now()
	for t := 0; t < *threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n, e uint64
			var mine []int64
			for !stop.Load() {
				t0 := time.Now()
				if _, err := sf.NextID(); err != nil {
					e++
					continue
				}
				if n%128 == 0 {
					mine = append(mine, time.Since(t0).Nanoseconds())
				}
				n++
			}
			total.Add(n)
			errs.Add(e)
			mu.Lock()
			samples = append(samples, mine...)
			mu.Unlock()
		}()
	}
	time.Sleep(time.Duration(*secs * float64(time.Second)))
	stop.Store(true)
	wg.Wait()
	el := time.Since(start).Seconds()
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	var p99 int64
	if len(samples) > 0 {
		p99 = samples[int(float64(len(samples)-1)*0.99)]
	}
	fmt.Printf("{\"results\":[{\"mode\":\"sonyflake\",\"threads\":%d,\"ids\":%d,\"seconds\":%.3f,"+
		"\"ids_per_sec\":%.0f,\"p99_ns\":%d,\"errors\":%d}]}\n",
		*threads, total.Load(), el, float64(total.Load())/el, p99, errs.Load())
}
