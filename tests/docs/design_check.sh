#!/usr/bin/env bash
# design_check.sh: keeps docs/design.md and the repository's links true (label docs).
#
#   tests/docs/design_check.sh [SOURCE_DIR [BIN_DIR]]   (default: SECKILL_SOURCE_DIR, or
#                                                       the tree this script sits in)
#
# 1. Every script in lua/ has its contract in docs/design.md, copied from its header: the
#    comment lines at the top of the script, up to its first line of code, which hold the
#    KEYS/ARGV contract. In design.md a script's copy is one fenced block right after a
#    marker line:
#        <!-- contract: lua/NAME.lua -->
#        ```lua
#        -- the header, line for line
#        ```
#    A header and its copy that differ fail with a diff; a script without a marker, or a
#    marker without its script, fails too.
# 2. No tracked file links outside the repository: no path into a "shared" folder beside
#    the clone, which a clone does not have.
# 3. Every relative link of every tracked Markdown file names a file or folder that exists.
# 4. With BIN_DIR (second argument, or SECKILL_BIN_DIR): order/README.md's and
#    consumer/README.md's configuration tables are what `--help-markdown` prints, the
#    table the binary's parser and --help come from (STYLE.md: one table per program).
# Needs bash, awk, diff, grep; git when the tree is a git checkout (the tracked files),
# else every file under the tree but build and run folders.
#
#   tests/docs/design_check.sh --print lua/NAME.lua...
# prints the marker and block of each script as design.md must carry them (to paste after
# changing a header).
set -u
if [ "${1:-}" = --print ]; then
    shift
    for f in "$@"; do
        printf '<!-- contract: %s -->\n```lua\n' "$f"
        awk '/^--/ { print; next } { exit }' "$f"
        printf '```\n'
    done
    exit 0
fi
ROOT=${1:-${SECKILL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}}
BIN=${2:-${SECKILL_BIN_DIR:-}}
cd "$ROOT" || { echo "design_check: no source tree at $ROOT" >&2; exit 2; }
DOC=docs/design.md
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

say_fail() { echo "FAIL: $*"; fail=1; }

# The files the repository holds: git's list, or a walk that leaves out build output.
list_files() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files
    else
        find . -type f -not -path './.git/*' -not -path './build*' -not -path './.run/*' \
            -not -path './bench/out/*' -not -path '*/node_modules/*' | sed 's|^\./||'
    fi
}

# --- 1. the scripts' contracts ---------------------------------------------------------
[ -f "$DOC" ] || { echo "FAIL: $DOC is missing"; exit 1; }

# The header of a script: its leading "--" lines.
header_of() { awk '/^--/ { print; next } { exit }' "$1"; }

# The block after "<!-- contract: lua/NAME.lua -->" in design.md: the lines between the
# ```lua fence that must follow the marker and the closing fence. Nothing when absent.
block_of() {
    awk -v want="<!-- contract: $1 -->" '
        $0 == want { found = 1; state = 1; next }
        state == 1 { if ($0 != "```lua") { print "(the marker is not followed by a ```lua fence)"; exit }
                     state = 2; next }
        state == 2 { if ($0 == "```") exit; print }
        END { if (!found) exit 3 }' "$DOC"
}

nscripts=0
for f in lua/*.lua; do
    [ -e "$f" ] || continue
    nscripts=$((nscripts + 1))
    header_of "$f" >"$tmp/header"
    if [ ! -s "$tmp/header" ]; then
        say_fail "$f has no header comment (its KEYS/ARGV contract)"
        continue
    fi
    if ! block_of "$f" >"$tmp/block"; then
        say_fail "$DOC has no section for $f (a line '<!-- contract: $f -->', then its header in a \`\`\`lua block)"
        continue
    fi
    if ! diff -u --label "$f (header)" --label "$DOC (contract: $f)" "$tmp/header" "$tmp/block" >"$tmp/diff"; then
        say_fail "the contract of $f in $DOC differs from the script's header:"
        cat "$tmp/diff"
    fi
done
[ "$nscripts" -gt 0 ] || say_fail "no lua/*.lua found under $ROOT"

# Markers that name no script (a script removed or renamed, its section left behind).
grep -o '^<!-- contract: [^ ]* -->$' "$DOC" | sed 's/^<!-- contract: //; s/ -->$//' |
    sort | uniq -c | while read -r n name; do
        [ -f "$name" ] || echo "FAIL: $DOC has a contract for $name, which does not exist"
        [ "$n" -eq 1 ] || echo "FAIL: $DOC has $n contracts for $name"
    done >"$tmp/stale"
if [ -s "$tmp/stale" ]; then cat "$tmp/stale"; fail=1; fi

# --- 2. no link out of the repository ------------------------------------------------------
list_files >"$tmp/files"
# Built from pieces, so that this script does not find itself.
out_pat='\.\./'"shared"'|'"shared"'/DESIGN\.md'
while IFS= read -r f; do
    [ -f "$f" ] || continue
    grep -Iq . "$f" 2>/dev/null || continue # binary or empty
    grep -nHE "$out_pat" "$f" 2>/dev/null
done <"$tmp/files" >"$tmp/outside"
if [ -s "$tmp/outside" ]; then
    say_fail "links out of the repository (the design is $DOC):"
    cat "$tmp/outside"
fi

# --- 3. relative Markdown links resolve -----------------------------------------------------
# Inline links [text](target) outside fenced code blocks and code spans; targets with a
# scheme (http:, mailto:) and pure anchors (#...) are not files.
grep -E '\.md$' "$tmp/files" >"$tmp/md"
nlinks=0
while IFS= read -r f; do
    [ -f "$f" ] || continue
    dir=$(dirname "$f")
    awk '
        /^[ \t]*(```|~~~)/ { code = !code; next }
        code { next }
        {
            line = $0
            gsub(/`[^`]*`/, "", line) # code spans are not links
            while (match(line, /\]\([^) \t]+( "[^"]*")?\)/)) {
                t = substr(line, RSTART + 2, RLENGTH - 3)
                sub(/ ".*$/, "", t)
                print NR "\t" t
                line = substr(line, RSTART + RLENGTH)
            }
        }' "$f" >"$tmp/links"
    while IFS=$'\t' read -r ln target; do
        case $target in
            *://* | mailto:* | \#*) continue ;;
        esac
        path=${target%%#*}
        path=${path%%\?*}
        [ -n "$path" ] || continue
        nlinks=$((nlinks + 1))
        case $path in
            /*) say_fail "$f:$ln: absolute link $target (links stay relative, inside the repository)"; continue ;;
        esac
        if [ ! -e "$dir/$path" ]; then
            say_fail "$f:$ln: link to $target: no such file"
            continue
        fi
        # A link that climbs out of the tree is a link outside the repository.
        real=$(cd "$dir" && realpath -m "$path")
        case $real in
            "$PWD" | "$PWD"/*) ;;
            *) say_fail "$f:$ln: link to $target leaves the repository" ;;
        esac
    done <"$tmp/links"
done <"$tmp/md"

# --- 4. the configuration tables ------------------------------------------------------------
# The README's table: from its header line to the first line that is not a table row.
readme_table() {
    awk '$0 == "| key | environment | type | default | meaning |" { t = 1 }
         t && !/^\|/ { exit }
         t { print }' "$1"
}
ntables=0
if [ -n "$BIN" ]; then
    for pair in order/README.md:seckill-order consumer/README.md:seckill-consumer; do
        readme=${pair%%:*}
        bin=$BIN/${pair##*:}
        if [ ! -x "$bin" ]; then
            say_fail "$bin is missing (the configuration table of $readme is checked against it)"
            continue
        fi
        readme_table "$readme" >"$tmp/readme_table"
        if [ ! -s "$tmp/readme_table" ]; then
            say_fail "$readme has no configuration table (a line '| key | environment | type | default | meaning |')"
            continue
        fi
        # Defaults only: the environment's overrides do not show in --help-markdown.
        "$bin" --help-markdown 2>&1 | grep '^|' >"$tmp/help_table"
        if ! diff -u --label "$readme" --label "${pair##*:} --help-markdown" \
            "$tmp/readme_table" "$tmp/help_table" >"$tmp/diff"; then
            say_fail "the configuration table of $readme is not what ${pair##*:} --help-markdown prints (paste its output):"
            cat "$tmp/diff"
        fi
        ntables=$((ntables + 1))
    done
fi

if [ $fail -ne 0 ]; then
    echo "design_check: FAILED"
    exit 1
fi
echo "design_check: ok ($nscripts scripts' contracts in $DOC, $(wc -l <"$tmp/md") Markdown files, $nlinks relative links, $ntables configuration tables)"
