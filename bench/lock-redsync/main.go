// lock-redsync: redsync (go-redsync/redsync v4 on go-redis v9) lock/unlock pairs for
// bench/bench-lock.sh, beside librlock's rlock_bench and Redisson's driver: the same
// modes, the same output line.
//
//	lock-redsync --urls redis://h:p[,...] --mode uncontended|contended --conc N --secs S
//
// uncontended: N goroutines, each on its own name; contended: N goroutines on one name
// (hand-off: from a holder's unlock call to the next holder's grant). More than one URL:
// Redlock over those servers (redsync's Mutex is Redlock). redsync's own defaults
// otherwise (retry delay 50-250 ms random), as a user would run it, with tries unbounded.
// Output: pairs=P secs=S pairs_per_s=X cpu_s=C p50_us=A p99_us=B
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func main() {
	urls := flag.String("urls", "redis://127.0.0.1:6379", "comma-separated redis:// URLs (more than one: Redlock)")
	mode := flag.String("mode", "uncontended", "uncontended or contended")
	conc := flag.Int("conc", 1, "concurrent holders")
	secs := flag.Float64("secs", 3, "seconds to run")
	flag.Parse()
	var pools []redis.Pool
	for _, u := range strings.Split(*urls, ",") {
		opt, err := goredislib.ParseURL(u)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lock-redsync:", err)
			os.Exit(2)
		}
		opt.PoolSize = *conc + 4
		pools = append(pools, goredis.NewPool(goredislib.NewClient(opt)))
	}
	rs := redsync.New(pools...)
	var pairs atomic.Int64
	var lastUnlock atomic.Int64 // ns, contended hand-off
	var mu sync.Mutex
	var handoff []int64
	stop := time.Now().Add(time.Duration(*secs * float64(time.Second)))
	pid := os.Getpid()
	cpu0 := cpuSeconds()
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < *conc; i++ {
		name := fmt.Sprintf("bench-redsync-%d-%d", pid, i)
		if *mode == "contended" {
			name = fmt.Sprintf("bench-redsync-%d", pid)
		}
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			m := rs.NewMutex(name, redsync.WithExpiry(30*time.Second), redsync.WithTries(1<<30))
			ctx := context.Background()
			for time.Now().Before(stop) {
				if err := m.LockContext(ctx); err != nil {
					fmt.Fprintln(os.Stderr, "lock-redsync: lock:", err)
					os.Exit(1)
				}
				if *mode == "contended" {
					if lu := lastUnlock.Load(); lu != 0 {
						d := time.Now().UnixNano() - lu
						mu.Lock()
						handoff = append(handoff, d/1000)
						mu.Unlock()
					}
					lastUnlock.Store(time.Now().UnixNano())
				}
				if _, err := m.UnlockContext(ctx); err != nil {
					fmt.Fprintln(os.Stderr, "lock-redsync: unlock:", err)
					os.Exit(1)
				}
				pairs.Add(1)
			}
		}(name)
	}
	wg.Wait()
	dt := time.Since(t0).Seconds()
	cpu := cpuSeconds() - cpu0
	p50, p99 := int64(0), int64(0)
	if len(handoff) > 0 {
		sort.Slice(handoff, func(a, b int) bool { return handoff[a] < handoff[b] })
		p50 = handoff[len(handoff)*50/100]
		p99 = handoff[len(handoff)*99/100]
	}
	fmt.Printf("pairs=%d secs=%.3f pairs_per_s=%.0f cpu_s=%.3f p50_us=%d p99_us=%d\n",
		pairs.Load(), dt, float64(pairs.Load())/dt, cpu, p50, p99)
}
