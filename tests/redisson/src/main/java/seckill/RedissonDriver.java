/* The Redisson side of librlock's interop tests (tests/integration/test_rlock_redisson.c).
 *
 * One JVM per test process: the C test starts it, writes one command per line on its
 * stdin and reads one reply line per command on its stdout ("ok ..." or "err ...").
 * Every command runs on the main thread, so every lock this driver takes has one owner
 * (Redisson's "<uuid>:<thread id>"). Times are wall-clock milliseconds
 * (System.currentTimeMillis), comparable with the C side's CLOCK_REALTIME.
 *
 * Usage: java -jar rlock-redisson-driver.jar <redis-url> <watchdog-ms>
 *   redis://[:password@]host:port  or  redis-cluster://[:password@]host:port[,host:port...]
 */
package seckill;

import java.time.Duration;
import org.redisson.api.RateType;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RAtomicLong;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

public final class RedissonDriver {
    private RedissonDriver() {
    }

    private static RedissonClient connect(String url, long watchdogMs) {
        Config config = new Config();
        config.setLockWatchdogTimeout(watchdogMs);
        String rest;
        String password = null;
        boolean cluster = url.startsWith("redis-cluster://");
        rest = url.substring(url.indexOf("://") + 3);
        int at = rest.lastIndexOf('@');
        if (at >= 0) {
            String auth = rest.substring(0, at);
            password = auth.substring(auth.indexOf(':') + 1);
            rest = rest.substring(at + 1);
        }
        int slash = rest.indexOf('/');
        if (slash >= 0) {
            rest = rest.substring(0, slash);
        }
        if (cluster) {
            for (String node : rest.split(",")) {
                config.useClusterServers().addNodeAddress("redis://" + node);
            }
            if (password != null && !password.isEmpty()) {
                config.useClusterServers().setPassword(password);
            }
        } else {
            config.useSingleServer().setAddress("redis://" + rest);
            if (password != null && !password.isEmpty()) {
                config.useSingleServer().setPassword(password);
            }
        }
        return Redisson.create(config);
    }

    private static RLock lock(RedissonClient r, String kind, String name) {
        switch (kind) {
        case "r":
            return r.getReadWriteLock(name).readLock();
        case "w":
            return r.getReadWriteLock(name).writeLock();
        case "f":
            return r.getFairLock(name);
        case "s":
            return r.getSpinLock(name);
        case "n":
            return r.getFencedLock(name);
        default:
            return r.getLock(name);
        }
    }

    /* GET then SET of a counter under the lock: a lost exclusion loses increments. */
    private static void bump(RAtomicLong ctr) {
        long v = ctr.get();
        Thread.yield();
        ctr.set(v + 1);
    }

    private static String run(RedissonClient r, String[] a) throws Exception {
        long now;
        switch (a[0]) {
        case "ping":
            return "ok";
        case "tid":
            return "ok " + Thread.currentThread().getId();
        case "lock": { /* lock <l|r|w> <name> <lease ms, 0: watchdog> */
            RLock l = lock(r, a[1], a[2]);
            long lease = Long.parseLong(a[3]);
            if (lease > 0) {
                l.lock(lease, TimeUnit.MILLISECONDS);
            } else {
                l.lock();
            }
            return "ok " + System.currentTimeMillis();
        }
        case "trylock": { /* trylock <kind> <name> <wait ms> <lease ms, 0: watchdog> */
            RLock l = lock(r, a[1], a[2]);
            long lease = Long.parseLong(a[4]);
            boolean got = lease > 0 ? l.tryLock(Long.parseLong(a[3]), lease, TimeUnit.MILLISECONDS)
                                    : l.tryLock(Long.parseLong(a[3]), TimeUnit.MILLISECONDS);
            now = System.currentTimeMillis();
            return "ok " + (got ? 1 : 0) + " " + now;
        }
        case "unlock": { /* unlock <kind> <name> */
            RLock l = lock(r, a[1], a[2]);
            try {
                l.unlock();
            } catch (IllegalMonitorStateException e) {
                return "err not-held";
            }
            return "ok " + System.currentTimeMillis();
        }
        case "psem_set": /* psem_set <name> <permits>: RPermitExpirableSemaphore.trySetPermits */
            return "ok " + (r.getPermitExpirableSemaphore(a[1]).trySetPermits(Integer.parseInt(a[2])) ? 1 : 0);
        case "psem_acq": { /* psem_acq <name> <wait ms> <lease ms, 0: none>: the permit id or - */
            long lease = Long.parseLong(a[3]);
            String id = lease > 0
                ? r.getPermitExpirableSemaphore(a[1]).tryAcquire(Long.parseLong(a[2]), lease, TimeUnit.MILLISECONDS)
                : r.getPermitExpirableSemaphore(a[1]).tryAcquire(Long.parseLong(a[2]), TimeUnit.MILLISECONDS);
            return "ok " + (id == null ? "-" : id);
        }
        case "psem_rel": /* psem_rel <name> <id>: 1 released, 0 not held */
            return "ok " + (r.getPermitExpirableSemaphore(a[1]).tryRelease(a[2]) ? 1 : 0);
        case "psem_avail": /* psem_avail <name> */
            return "ok " + r.getPermitExpirableSemaphore(a[1]).availablePermits();
        case "rl_set": /* rl_set <name> <rate> <interval ms>: RRateLimiter.trySetRate, OVERALL */
            return "ok " + (r.getRateLimiter(a[1]).trySetRate(RateType.OVERALL, Long.parseLong(a[2]),
                                                              Duration.ofMillis(Long.parseLong(a[3]))) ? 1 : 0);
        case "rl_try": /* rl_try <name> <permits>: RRateLimiter.tryAcquire, no wait */
            return "ok " + (r.getRateLimiter(a[1]).tryAcquire(Long.parseLong(a[2])) ? 1 : 0);
        case "token": /* token <name>: the fenced lock's last token (RFencedLock.getToken) */
            return "ok " + r.getFencedLock(a[1]).getToken();
        case "holds": /* holds <kind> <name>: this thread's hold count */
            return "ok " + lock(r, a[1], a[2]).getHoldCount();
        case "mutex": { /* mutex <kind> <name> <rounds> <counter>: lock, GET+SET, unlock */
            RLock l = lock(r, a[1], a[2]);
            RAtomicLong ctr = r.getAtomicLong(a[4]);
            int rounds = Integer.parseInt(a[3]);
            for (int i = 0; i < rounds; i++) {
                l.lock();
                try {
                    bump(ctr);
                } finally {
                    l.unlock();
                }
            }
            return "ok";
        }
        case "rcheck": { /* rcheck <name> <rounds> <counter>: under a read lock the counter must not move */
            RLock l = lock(r, "r", a[1]);
            RAtomicLong ctr = r.getAtomicLong(a[3]);
            int rounds = Integer.parseInt(a[2]);
            int moved = 0;
            for (int i = 0; i < rounds; i++) {
                l.lock();
                try {
                    long v = ctr.get();
                    Thread.yield();
                    if (ctr.get() != v) {
                        moved++;
                    }
                } finally {
                    l.unlock();
                }
            }
            return "ok " + moved;
        }
        case "sem_set": /* sem_set <name> <permits> */
            return "ok " + (r.getSemaphore(a[1]).trySetPermits(Integer.parseInt(a[2])) ? 1 : 0);
        case "sem": { /* sem <name> <rounds> <in-use counter> <total>: acquire, count users, release */
            RSemaphore s = r.getSemaphore(a[1]);
            RAtomicLong inUse = r.getAtomicLong(a[3]);
            int rounds = Integer.parseInt(a[2]);
            long total = Long.parseLong(a[4]);
            long over = 0;
            long max = 0;
            for (int i = 0; i < rounds; i++) {
                s.acquire();
                long u = inUse.incrementAndGet();
                max = Math.max(max, u);
                if (u > total) {
                    over++;
                }
                inUse.decrementAndGet();
                s.release();
            }
            return "ok " + over + " " + max;
        }
        case "sem_try": { /* sem_try <name> <wait ms>: one permit */
            boolean got = r.getSemaphore(a[1]).tryAcquire(Long.parseLong(a[2]), TimeUnit.MILLISECONDS);
            return "ok " + (got ? 1 : 0) + " " + System.currentTimeMillis();
        }
        case "sem_release": /* sem_release <name> <n> */
            r.getSemaphore(a[1]).release(Integer.parseInt(a[2]));
            return "ok " + System.currentTimeMillis();
        case "latch_set": /* latch_set <name> <count> */
            return "ok " + (r.getCountDownLatch(a[1]).trySetCount(Long.parseLong(a[2])) ? 1 : 0);
        case "latch_down":
            r.getCountDownLatch(a[1]).countDown();
            return "ok " + System.currentTimeMillis();
        case "latch_await": { /* latch_await <name> <wait ms> */
            RCountDownLatch c = r.getCountDownLatch(a[1]);
            boolean done = c.await(Long.parseLong(a[2]), TimeUnit.MILLISECONDS);
            return "ok " + (done ? 1 : 0) + " " + System.currentTimeMillis();
        }
        default:
            return "err unknown command " + a[0];
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: RedissonDriver <redis-url> <watchdog-ms>");
            System.exit(2);
        }
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        RedissonClient r = connect(args[0], Long.parseLong(args[1]));
        /* the connection-manager id (the prefix of this driver's hash fields), then the
         * Redisson version actually loaded */
        out.println("ready " + ((Redisson) r).getServiceManager().getId() + " "
                    + Redisson.class.getPackage().getImplementationVersion());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            if (line.equals("quit")) {
                break;
            }
            String reply;
            try {
                reply = run(r, line.split(" "));
            } catch (Exception e) {
                reply = "err " + e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' ');
            }
            out.println(reply);
        }
        r.shutdown();
    }
}
