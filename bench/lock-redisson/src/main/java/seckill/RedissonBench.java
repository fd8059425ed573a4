/* RedissonBench: Redisson's (async API, RLock) lock/unlock pairs for bench/bench-lock.sh,
 * beside librlock's rlock_bench and redsync's lock-redsync: the same modes, the same
 * output line.
 *
 *   java -jar rlock-redisson-bench.jar redis://h:p uncontended|contended N SECS
 *
 * N chains of lockAsync -> unlockAsync run at once, each with an owner id of its own (the
 * async API's threadId), on a name of its own (uncontended) or one name (contended:
 * hand-off from a holder's unlock call to the next grant, waiters woken by Redisson's
 * pub/sub). Leases of 30 s, so no watchdog runs.
 * Output: pairs=P secs=S pairs_per_s=X cpu_s=C p50_us=A p99_us=B */
package seckill;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

public final class RedissonBench {
    private static long stopNs;
    private static final AtomicLong pairs = new AtomicLong();
    private static final AtomicLong lastUnlock = new AtomicLong();
    private static final List<Long> handoff = Collections.synchronizedList(new ArrayList<>());
    private static volatile String failure;

    private static long cpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime();
    }

    private static void chain(RLock l, long owner, boolean contended, CountDownLatch done) {
        if (System.nanoTime() >= stopNs || failure != null) {
            done.countDown();
            return;
        }
        l.lockAsync(30000, TimeUnit.MILLISECONDS, owner).whenComplete((v, e) -> {
            if (e != null) {
                failure = e.toString();
                done.countDown();
                return;
            }
            if (contended) {
                long lu = lastUnlock.get();
                if (lu != 0) {
                    handoff.add((System.nanoTime() - lu) / 1000);
                }
                lastUnlock.set(System.nanoTime());
            }
            l.unlockAsync(owner).whenComplete((v2, e2) -> {
                if (e2 != null) {
                    failure = e2.toString();
                    done.countDown();
                    return;
                }
                pairs.incrementAndGet();
                chain(l, owner, contended, done);
            });
        });
    }

    public static void main(String[] a) throws Exception {
        if (a.length != 4) {
            System.err.println("usage: RedissonBench redis://host:port uncontended|contended N SECS");
            System.exit(2);
        }
        boolean contended = a[1].equals("contended");
        int n = Integer.parseInt(a[2]);
        Config config = new Config();
        config.useSingleServer().setAddress(a[0]);
        RedissonClient r = Redisson.create(config);
        long pid = ProcessHandle.current().pid();
        /* warm: connections open, scripts loaded */
        RLock w = r.getLock("bench-redisson-warm-" + pid);
        for (int i = 0; i < 200; i++) {
            w.lockAsync(30000, TimeUnit.MILLISECONDS, 1).get();
            w.unlockAsync(1).get();
        }
        CountDownLatch done = new CountDownLatch(n);
        long cpu0 = cpuNs(), t0 = System.nanoTime();
        stopNs = t0 + (long) (Double.parseDouble(a[3]) * 1e9);
        for (int i = 0; i < n; i++) {
            RLock l = r.getLock(contended ? "bench-redisson-" + pid : "bench-redisson-" + pid + "-" + i);
            chain(l, 1000 + i, contended, done);
        }
        done.await();
        double dt = (System.nanoTime() - t0) / 1e9, cpu = (cpuNs() - cpu0) / 1e9;
        r.shutdown();
        if (failure != null) {
            System.err.println("RedissonBench: " + failure);
            System.exit(1);
        }
        List<Long> h = new ArrayList<>(handoff);
        Collections.sort(h);
        long p50 = h.isEmpty() ? 0 : h.get(h.size() * 50 / 100);
        long p99 = h.isEmpty() ? 0 : h.get(h.size() * 99 / 100);
        System.out.printf("pairs=%d secs=%.3f pairs_per_s=%.0f cpu_s=%.3f p50_us=%d p99_us=%d%n", pairs.get(), dt,
                          pairs.get() / dt, cpu, p50, p99);
    }
}
