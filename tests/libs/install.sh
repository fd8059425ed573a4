#!/bin/sh
# The installed libidgen and librlock, shared or static, on their own (tests/libs.cmake):
#   install.sh shared|static SOURCE_DIR WORK_DIR CC NM
# 1. configures the tree in WORK_DIR/build with -DBUILD_SHARED_LIBS=ON|OFF (tests and
#    services off) and builds idgen, rlock and the idgen CLI;
# 2. shared: `nm -D --defined-only` on libidgen.so and librlock.so shows exactly the
#    functions their headers declare with IDGEN_EXPORT / RLOCK_EXPORT (and the linker's
#    _init/_fini/_edata/_end/__bss_start), nothing of rcluster, sk_redis_url or internals;
# 3. `cmake --install` of components idgen, rlock, cmake (and rcluster when static) into
#    WORK_DIR/prefix; pkg-config reports project()'s version;
# 4. tests/libs/libs_user.c built two ways, as a user builds it:
#    - with `pkg-config --cflags --libs libidgen librlock` only;
#    - by tests/libs/cmake_user (find_package(seckill), seckill::idgen and seckill::rlock)
#      with only CMAKE_PREFIX_PATH to the prefix (no PKG_CONFIG_PATH to it: the package
#      finds its own dependencies); that project asking for the next major version fails;
#    each binary linked to the .so of the prefix (or to no libidgen/librlock .so at all
#    when static), run against $SECKILL_REDIS_URL: IDs, a lock with fencing tokens, and
#    the version macros equal project()'s version.
set -eu
mode=$1 src=$2 work=$3 cc=$4 nm=$5
case $mode in
shared) shared=ON ;;
static) shared=OFF ;;
*) echo "mode: shared|static" >&2 && exit 2 ;;
esac
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -n "${SECKILL_REDIS_URL:-}" ] || fail "no SECKILL_REDIS_URL (deploy/local.sh test sets it)"

version=$(sed -n 's/^project(seckill VERSION \([0-9][0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || fail "no version in project() of $src/CMakeLists.txt"

rm -rf "$work"
mkdir -p "$work"
# No sanitizer, no tests: a user's build of the libraries.
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=$shared \
    -DSECKILL_TESTS=OFF -DSECKILL_SANITIZE=OFF -DSECKILL_WERROR=ON -DCMAKE_C_COMPILER="$cc" \
    >"$work/configure.log" || { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/build" -j2 --target idgen rlock idgen_cli >"$work/build.log" 2>&1 ||
    { cat "$work/build.log"; fail "build"; }

# Exports: what the header marks, exactly.
check_exports() { # LIB.so HEADER MACRO
    got=$("$nm" -D --defined-only "$1" | awk '{print $NF}' |
        grep -Ev '^(_init|_fini|_edata|_end|__bss_start)$' | sort -u)
    want=$(grep -E "^$3 " "$2" | sed -E 's/^[^(]*[^a-z0-9_(]([a-z0-9_]+)\(.*/\1/' | sort -u)
    [ -n "$want" ] || fail "no $3 declarations in $2"
    if [ "$got" != "$want" ]; then
        echo "exported by $1 but not declared with $3:" >&2
        printf '%s\n' "$got" | grep -vxF "$want" >&2 || true
        echo "declared with $3 but not exported:" >&2
        printf '%s\n' "$want" | grep -vxF "$got" >&2 || true
        fail "exports of $1"
    fi
    echo "$1: $(printf '%s\n' "$got" | wc -l) exported symbols, all $3 API"
}
if [ $mode = shared ]; then
    check_exports "$work/build/lib/libidgen.so" "$src/idgen/idgen.h" IDGEN_EXPORT
    check_exports "$work/build/lib/librlock.so" "$src/lock/rlock.h" RLOCK_EXPORT
fi

components="idgen rlock cmake"
[ $mode = static ] && components="$components rcluster"
for c in $components; do
    cmake --install "$work/build" --prefix "$work/prefix" --component $c >/dev/null
done

pcdir=$(dirname "$(find "$work/prefix" -name libidgen.pc)")
export PKG_CONFIG_PATH=$pcdir
for pc in libidgen librlock; do
    v=$(pkg-config --modversion $pc) || fail "pkg-config $pc"
    [ "$v" = "$version" ] || fail "$pc.pc says $v, project() says $version"
done
# Without the .pc file's "pkgconfig/../..": ldd prints the path a binary's rpath names,
# and the two builds below must name the same one.
libdir=$(cd "$(pkg-config --variable=libdir libidgen)" && pwd)
# shellcheck disable=SC2046 # word splitting of pkg-config's flags is intended
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/libs_user" "$src/tests/libs/libs_user.c" \
    $(pkg-config --cflags --libs libidgen librlock) -Wl,-rpath,"$libdir" ||
    fail "build libs_user with pkg-config ($(pkg-config --cflags --libs libidgen librlock))"

# Run BINARY (built by HOW): the libraries of the prefix, then IDs and locks on Redis.
run_user() { # BINARY HOW
    deps=$(ldd "$1")
    if [ $mode = shared ]; then
        for l in libidgen librlock; do
            printf '%s\n' "$deps" | grep -q "$l\.so.* => $libdir/$l\.so" ||
                fail "$2: $1 does not load $libdir/$l.so: $deps"
        done
    elif printf '%s\n' "$deps" | grep -Eq 'lib(idgen|rlock)\.so'; then
        fail "$2: static $1 loads a shared library: $deps"
    fi
    out=$("$1" "$SECKILL_REDIS_URL" "libs-$mode-$2-$$") || fail "$2: libs_user"
    [ "$out" = "$version $version" ] || fail "$2: version macros: '$out', project(): $version"
}
run_user "$work/libs_user" pkg-config

# The same program through find_package(seckill). The pkg-config path to the prefix is
# dropped: only CMAKE_PREFIX_PATH leads to it.
cmake_user() { # BUILD_DIR WANT
    env -u PKG_CONFIG_PATH cmake -S "$src/tests/libs/cmake_user" -B "$1" \
        -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_C_COMPILER="$cc" -DSECKILL_WANT="$2"
}
cmake_user "$work/cmake_user" "$version" >"$work/cmake_user.log" 2>&1 ||
    { cat "$work/cmake_user.log"; fail "configure tests/libs/cmake_user (find_package)"; }
cmake --build "$work/cmake_user" >>"$work/cmake_user.log" 2>&1 ||
    { cat "$work/cmake_user.log"; fail "build tests/libs/cmake_user (find_package)"; }
grep -q "^seckill_DIR:PATH=$work/prefix/" "$work/cmake_user/CMakeCache.txt" ||
    fail "find_package(seckill) found $(grep '^seckill_DIR' "$work/cmake_user/CMakeCache.txt")"
run_user "$work/cmake_user/libs_user" find_package

next=$((${version%%.*} + 1)).0
if cmake_user "$work/cmake_user_next" "$next" >"$work/cmake_user_next.log" 2>&1; then
    fail "find_package(seckill $next) accepted version $version"
fi
grep -q "compatible with requested version" "$work/cmake_user_next.log" ||
    { cat "$work/cmake_user_next.log"; fail "find_package(seckill $next): not a version refusal"; }

echo "$mode: installed libidgen and librlock $version built (pkg-config, find_package) and ran from $work/prefix"
