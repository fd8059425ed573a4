/* A program outside the tree, as a user of the installed libraries writes it: built by
 * tests/libs/install.sh against a `cmake --install` prefix twice, with nothing but
 * `pkg-config --cflags --libs libidgen librlock`, and by tests/libs/cmake_user with
 * find_package(seckill); each binary is then run against the test Redis.
 * Usage: libs_user REDIS_URL NAME. Prints "<IDGEN_VERSION> <RLOCK_VERSION>" on success;
 * exit 1 with a message on any failure. */
#include <stdio.h>
#include <stdlib.h>

#include <idgen.h>
#include <rlock.h>

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "libs_user: %s: %s\n", what, msg ? msg : "(null)");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return fail("usage", "libs_user REDIS_URL NAME");
    char err[256] = "";

    idgen_t *g = idgen_new(argv[1], argv[2], NULL, err, sizeof(err));
    if (g == NULL)
        return fail("idgen_new", err);
    uint64_t a = 0, b = 0;
    if (idgen_next(g, &a) != IDGEN_OK || idgen_next(g, &b) != IDGEN_OK)
        return fail("idgen_next", idgen_errstr(g));
    idgen_free(g);
    if (a == 0 || b <= a)
        return fail("idgen_next", "IDs not increasing");

    rlock_client_t *c = rlock_client_new(argv[1], NULL, err, sizeof(err));
    if (c == NULL)
        return fail("rlock_client_new", err);
    rlock_t *l = rlock_new(c, argv[2], RLOCK_SIMPLE);
    if (l == NULL)
        return fail("rlock_new", "NULL");
    uint64_t f1 = 0, f2 = 0;
    int rc = rlock_try_lock(l, 0, 10000, &f1);
    if (rc != RLOCK_OK)
        return fail("rlock_try_lock", rlock_errstr(l));
    if (rlock_unlock(l) != RLOCK_OK)
        return fail("rlock_unlock", rlock_errstr(l));
    if (rlock_try_lock(l, 0, 10000, &f2) != RLOCK_OK || rlock_unlock(l) != RLOCK_OK)
        return fail("rlock_try_lock", rlock_errstr(l));
    if (f2 <= f1)
        return fail("rlock fence", "not increasing");
    rlock_free(l);
    rlock_client_free(c);

    printf("%s %s\n", IDGEN_VERSION, RLOCK_VERSION);
    return 0;
}
