#!/usr/bin/env bash
# Memcheck over a representative part of the extension's tests: the core and
# bulk producer tests against the real broker, and the fuzz tests with a small
# example count.  Fails if valgrind reports any invalid read/write, use of
# uninitialised memory, bad free, or a *definite* leak whose stack passes
# through cykafka's extension (_native*.so); see valgrind_summary.py.  Reports
# attributed to CPython or librdkafka are listed, not failed on.
#
#   tests/soak/valgrind.sh                             # ~10-20 min; too slow for CI
#   TESTS=tests/batch/test_produce_batch.py SELECT=arrow tests/soak/valgrind.sh
#
# Python defaults to the repository's .venv (what ./run creates); set PYTHON to
# use another.  Extra arguments go to pytest.  The full valgrind log is kept in
# $OUT (default /tmp/cykafka-valgrind) with a summary in $OUT/summary.txt and a
# reliability-table row in $OUT/row.json (tests/soak/table.py --valgrind $OUT).
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-$PWD/.venv/bin/python}
[ -x "$PY" ] || { echo "no python at $PY: run ./run tests once, or set PYTHON"; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt install valgrind)"; exit 2; }
OUT=${OUT:-/tmp/cykafka-valgrind}
mkdir -p "$OUT"
LOG="$OUT/memcheck.%p.log"
rm -f "$OUT"/memcheck.*.log

# PYTHONMALLOC=malloc: pymalloc's arenas otherwise look like leaks and its
# lock-free reads like invalid reads.
export PYTHONMALLOC=malloc
export CYKAFKA_FUZZ_EXAMPLES=${CYKAFKA_FUZZ_EXAMPLES:-25}
# The package installed in $PY's environment is what runs (set PYTHONPATH to
# test an in-place build instead).

read -r -a TESTS <<< "${TESTS:-tests/producer/test_producer.py tests/batch/test_produce_batch.py tests/producer/test_fuzz.py}"
SELECT=${SELECT:-"not million and not many_threads and not ten_thousand"}

valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite \
    --errors-for-leak-kinds=definite --num-callers=30 --trace-children=no \
    --log-file="$LOG" \
    "$PY" -m pytest -p no:cacheprovider -q -x "${TESTS[@]}" -k "$SELECT" "$@" \
    > "$OUT/pytest.txt" 2>&1
rc_pytest=$?

# The pytest process's log is the one that ran the tests (the biggest).
main_log=$(ls -S "$OUT"/memcheck.*.log | head -1)

"$PY" tests/soak/valgrind_summary.py "$main_log" --pytest-output "$OUT/pytest.txt" \
    --row "$OUT/row.json" \
    --command "TESTS='${TESTS[*]}' SELECT='$SELECT' tests/soak/valgrind.sh $*" \
    > "$OUT/summary.txt"
rc_summary=$?
cat "$OUT/summary.txt"
tail -3 "$OUT/pytest.txt"
[ "$rc_pytest" = 0 ] || { echo "pytest under valgrind failed (rc $rc_pytest), see $OUT/pytest.txt"; exit 1; }
exit $rc_summary
