#!/usr/bin/env bash
# The ansible-core matrix and the lab hosts' Pythons. For every version in tests/matrix/ansible-core.txt: the unit tier
# in its own pinned venv ($AIFABRIC_MATRIX_VENVS/ansible-core-<version>, else .matrix/: that ansible-core on the
# first of its Pythons this machine has, the collection's pins from constraints.txt, pytest and the report tests'
# parsers), then ansible-test sanity, every test: on the newest on the whole tree, on every other version on the
# collection's shipped content (plugins/ meta/ roles/ playbooks/ changelogs/: --sanity shipped, the default; the
# tests' and benchmarks' own code runs on the controller, and is checked by the newest). For every host Python
# (3.9 and 3.10: RHEL 9, Ubuntu 22.04): the tests that run on a host, sanity's compile and import of the modules and
# module_utils, and the host-side unit tests (tests/matrix/host-units.sh), with the newest ansible-core's ansible-test
# and module_utils (the oldest version's sanity runs compile and import on them too).
#   run.sh                      everything
#   run.sh --skip-current       leaves out the version .venv runs (make test covers it in tiers of its own; the host
#                               rows then use .venv)
#   run.sh --sanity all|shipped|ends|none
#                               where sanity runs: every test on the whole tree on every version (all); on the whole
#                               tree on the newest and on the shipped content on the others (shipped, the default); on
#                               the ends alone (ends); nowhere (none)
#   run.sh --units all|lean|none
#                               the unit tests each version runs: all of them (the default), or, lean (make test),
#                               the whole suite on the oldest version and on the first row of each controller Python
#                               (.venv's Python counts as run: the unit tier), and on the other rows the tests that
#                               reach ansible-core (the reaches_core mark, tests/unit/conftest.py): the plan, the
#                               model and the analysis are the same code on every ansible-core, not on every Python;
#                               or none: no unit tests, not even the host rows' (make test runs the matrix twice at
#                               once: its units with --sanity none in the foreground, its sanity with --units none in
#                               the background; --units none --sanity none builds or checks the venvs alone)
#   run.sh 2.17.14 host-3.9 ... those rows alone
# A version whose Pythons this machine lacks is skipped, and said so, in its line and in the table; so is a host
# Python it lacks. Prints one line per step and a table at the end; exits 1 when a row failed (not when one was
# skipped).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
HOST_PYTHONS=${HOST_PYTHONS:-3.9 3.10}
matrix=$(grep -E '^[0-9]' tests/matrix/ansible-core.txt)
listed=$(awk '{print $1}' <<<"$matrix")
oldest=$(head -n1 <<<"$listed")
newest=$(tail -n1 <<<"$listed")
if [ -x "$root/.venv/bin/python" ]; then
  current=$("$root/.venv/bin/python" -c 'from ansible.release import __version__; print(__version__)' 2>/dev/null \
    || true)
else
  current=$(grep -E '^ansible-core==' constraints.txt | cut -d= -f3)
fi
# Where the versions' venvs are: AIFABRIC_MATRIX_VENVS (make sets /var/cache/aifabric-matrix as root, so that a new
# clone of the checkout finds them built, as it finds the VM lab's image), else .matrix. A venv is built again when
# its pins or its Python change (the stamp below).
venvs=${AIFABRIC_MATRIX_VENVS:-$root/.matrix}
pytest_pin=$(grep -E '^pytest==' requirements-test.txt)
# what the unit tests read reports with (report.json against its JSON Schema, metrics.prom with Prometheus' parser):
# in every row, so that no row skips those tests
report_pins=$(grep -E '^(jsonschema|prometheus_client)==' requirements-test.txt | tr '\n' ' ')
versions=()
hosts=()
skip_current=0
row= rowdir=
sanity_mode=shipped
units_mode=all
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-current) skip_current=1 ;;
    --row) row=${2:?--row ROW DIR} rowdir=${3:?--row ROW DIR}; shift 2 ;;
    --sanity) sanity_mode=${2:?--sanity all, shipped, ends or none}; shift ;;
    --sanity=*) sanity_mode=${1#--sanity=} ;;
    --units) units_mode=${2:?--units all, lean or none}; shift ;;
    --units=*) units_mode=${1#--units=} ;;
    host-*) hosts+=("${1#host-}") ;;
    *) grep -qx -- "$1" <<<"$listed" \
         || { echo "matrix: $1 is not in tests/matrix/ansible-core.txt ($(echo $listed)) nor host-X.Y"; exit 2; }
       versions+=("$1") ;;
  esac
  shift
done
case "$sanity_mode" in all|shipped|ends|none) ;; *) echo "matrix: --sanity $sanity_mode: use all, shipped, ends or none"
  exit 2 ;; esac
case "$units_mode" in all|lean|none) ;; *) echo "matrix: --units $units_mode: use all, lean or none"; exit 2 ;; esac
if [ -z "$row" ] && [ ${#versions[@]} -eq 0 ] && [ ${#hosts[@]} -eq 0 ]; then
  mapfile -t versions <<<"$listed"
  read -r -a hosts <<<"$HOST_PYTHONS"
fi

units_ns=()   # the unit tests' own network namespace, when the pool runs rows side by side
if [ "${MATRIX_UNITS_NS:-}" = 1 ]; then units_ns=(unshare --net --mount bash -c 'mount -t sysfs sysfs /sys && ip link set lo up && exec "$@"' units); fi
rows=()      # version|python|sanity|units|sanity s|units s
failed=0
skipped=()
# The venv whose ansible-test and module_utils the host rows use: the newest ansible-core that runs here (.venv's,
# unless a matrix venv of this run holds a newer one).
host_core_venv= host_core=
if [ -n "$current" ] && [ -x "$root/.venv/bin/python" ]; then host_core_venv="$root/.venv" host_core=$current; fi
if [ -n "${HOST_CORE_VENV:-}" ]; then host_core_venv=$HOST_CORE_VENV host_core=$HOST_CORE; fi
newer() { [ -z "$2" ] || [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n1)" = "$1" ] && [ "$1" != "$2" ]; }

minor_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
expand() {   # 3.10-3.12 -> 3.10,3.11,3.12
  local lo=${1%-*} hi=${1#*-} out="" m
  for m in $(seq "${lo#3.}" "${hi#3.}"); do out+="${out:+,}3.$m"; done
  echo "$out"
}
controller_pythons() {   # the controller Pythons this venv's ansible-test supports
  "$1/bin/python" - <<'EOF'
import os, ansible_test
namespace = {}
with open(os.path.join(os.path.dirname(ansible_test.__file__), "_util", "target", "common", "constants.py")) as f:
    exec(f.read(), namespace)
print(",".join(namespace["CONTROLLER_PYTHON_VERSIONS"]))
EOF
}
# The collection's shipped content, which --sanity shipped checks on every version but the newest (the newest checks
# the whole tree: the tests, benchmarks and scripts too)
SHIPPED=(plugins/ meta/ roles/ playbooks/ changelogs/)
sanity_in() {   # sanity_in VENV LOG [HOSTS [TARGETS...]]: controller sanity (on TARGETS, or the whole tree), then
                # compile and import on each of HOSTS' Pythons
  local venv=$1 log=$2 hosts=${3:-} rc=0 h
  shift 2; [ $# -eq 0 ] || shift
  PATH="$venv/bin:$PATH" bash tests/sanity/run.sh "$@" > "$log" 2>&1 || rc=1
  for h in $hosts; do
    PATH="$venv/bin:$PATH" bash tests/sanity/run.sh --host-python "$h" >> "$log" 2>&1 \
      || {
      [ $? -eq 3 ] && { echo "sanity: compile and import on Python $h skipped: this machine lacks it"; continue; }
      rc=1; }
  done
  return $rc
}

venv_ready() {   # venv_ready VERSION VENV STAMP PYTHON: builds the venv unless its stamp is there
  local v=$1 venv=$2 stamp=$3 python=$4 start=$SECONDS
  [ ! -e "$stamp" ] || return 0
  rm -rf "$venv"
  # the collection's pins without .venv's ansible-core: this venv's ansible-core is the matrix's
  "$python" -m venv "$venv" && grep -v '^ansible-core==' constraints.txt > "$venv/constraints.txt" \
    && "$venv/bin/pip" install -q --disable-pip-version-check -c "$venv/constraints.txt" -r requirements.txt \
         "ansible-core==$v" "$pytest_pin" $report_pins \
    && touch "$stamp" && echo "ansible-core $v: venv built in $((SECONDS - start)) s"
}

version_row() {   # one ansible-core version: its venv, the units and sanity where asked
  local v=$1
  line=$(grep -E "^$v[[:space:]]" <<<"$matrix")
  read -r _ prefs supported <<<"$line"
  if [ "$skip_current" = 1 ] && [ "$v" = "$current" ]; then
    rows+=("$v|.venv|the sanity tier|the unit tier||"); return
  fi
  echo; echo "=== ansible-core $v"
  python=$(bash tests/matrix/find-python.sh ${prefs//,/ }) || {
    echo "ansible-core $v: SKIPPED: this machine has no Python ${prefs//,/ or } (pyenv's versions, /usr/bin, PATH)"
    skipped+=("ansible-core $v (needs Python ${prefs//,/ or })")
    rows+=("$v|none|SKIPPED|SKIPPED||"); return
  }
  venv="$venvs/ansible-core-$v"
  pyv=$("$python" -V 2>&1 | cut -d' ' -f2)
  echo "ansible-core $v: venv $venv on $python ($pyv)"
  start=$SECONDS
  stamp="$venv/.aifabric-$(cat requirements.txt constraints.txt <(echo "$pytest_pin $report_pins $python $("$python" -VV)") \
    | sha256sum | cut -c1-12)"
  # One builder at a time per venv (make test runs two invocations at once, one for the units and one for sanity, and
  # builds or checks the venvs before them: --units none --sanity none): the other waits, then finds the stamp.
  mkdir -p "$venvs"
  if ! { flock 9 && venv_ready "$v" "$venv" "$stamp" "$python"; } 9> "$venvs/.ansible-core-$v.lock"; then
    echo "ansible-core $v: its venv could not be built ($venv)"
    failed=$((failed + 1)); rows+=("$v|$pyv|venv FAILED|venv FAILED|$((SECONDS - start))|"); return
  fi
  got=$("$venv/bin/python" -c 'from ansible.release import __version__; print(__version__)')
  if [ "$got" != "$v" ]; then
    echo "ansible-core $v: $venv runs ansible-core $got"
    failed=$((failed + 1)); rows+=("$v|$pyv|venv runs $got|venv runs $got||"); return
  fi
  supports=$(controller_pythons "$venv")
  if [ "$supports" != "$(expand "$supported")" ] || ! grep -qw -- "$(minor_of "$python")" <<<"${supports//,/ }"; then
    echo "ansible-core $v: ansible-test supports controller Pythons $supports; tests/matrix/ansible-core.txt says" \
      "$supported and runs it on $pyv"
    failed=$((failed + 1)); rows+=("$v|$pyv|controller Pythons $supports|not run||"); return
  fi
  if newer "$v" "$host_core"; then host_core_venv=$venv host_core=$v; fi
  # The units first: they mostly wait (sockets, timers, child processes), so another row's sanity, which is CPU and
  # runs one at a time (tests/sanity/run.sh's lock), goes on beside them instead of this row waiting for the lock.
  units=- units_s='' summary=''
  if [ "$units_mode" != none ]; then
    start=$SECONDS
    marks="not needs_root" scope=
    if [ "${MATRIX_UNITS_SCOPE:-all}" = core ]; then
      marks="reaches_core and not needs_root"
      scope=" of those reaching ansible-core (Python $(minor_of "$python")'s whole suite runs in another row)"
    fi
    if PATH="$venv/bin:$PATH" "${units_ns[@]}" "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "$marks" \
        tests/unit > "$venv/units.log" 2>&1; then units=passed
    else units=FAILED; tail -40 "$venv/units.log"; fi
    units_s=$((SECONDS - start))
    summary=$(tail -n1 "$venv/units.log" | sed -E 's/^=+ //; s/ in [0-9.]+s.*//; s/, [0-9]+ (deselected|warnings?)//g')
    echo "ansible-core $v: units $units in $units_s s ($summary$scope)"
    [ -z "$scope" ] || summary="$summary, reaching ansible-core"
    summary=": $summary"
  fi
  sanity=-; sanity_s=
  ends=0; [ "$v" = "$oldest" ] || [ "$v" = "$newest" ] && ends=1
  targets=()   # the whole tree
  case "$sanity_mode" in
    all) ;;
    ends) [ "$ends" = 1 ] || targets=(none) ;;
    shipped) [ "$v" = "$newest" ] || targets=("${SHIPPED[@]}") ;;
    none) targets=(none) ;;
  esac
  if [ "${targets[*]:-}" != none ]; then
    start=$SECONDS
    # the host Pythons' compile and import on the oldest (and, --sanity all, every version but the newest: the host
    # rows run them with it)
    hosts_here=
    if [ "$v" != "$newest" ] && { [ "$v" = "$oldest" ] || [ "$sanity_mode" = all ]; }; then hosts_here=$HOST_PYTHONS; fi
    if sanity_in "$venv" "$venv/sanity.log" "$hosts_here" "${targets[@]}"; then sanity=passed
    else sanity=FAILED; tail -40 "$venv/sanity.log"; fi
    sanity_s=$((SECONDS - start))
    what="the whole tree"; [ ${#targets[@]} -eq 0 ] || what="${targets[*]}"
    [ "$sanity" = FAILED ] || sanity="$sanity$([ ${#targets[@]} -eq 0 ] || echo " (shipped)")"
    echo "ansible-core $v: sanity $sanity in $sanity_s s ($(grep -cE '^Running sanity test' "$venv/sanity.log")" \
      "tests on $what," \
      "Pythons $(grep -oE '^Running sanity test "[a-z-]+" on Python [0-9.]+' "$venv/sanity.log" | awk '{print $NF}' \
      | sort -uV | paste -sd' '), log $venv/sanity.log)"
  fi
  if [ "$units_mode" = none ] && [ "${targets[*]:-}" = none ]; then
    echo "ansible-core $v: venv ready (neither units nor sanity asked for)"
  fi
  [ "$sanity" != FAILED ] && [ "$units" != FAILED ] || failed=$((failed + 1))
  rows+=("$v|$pyv|$sanity|$units$summary|$sanity_s|$units_s")
}

host_row() {   # one host Python: compile and import (unless --sanity none), the host-side units (unless --units none)
  local h=$1
  echo; echo "=== host Python $h"
  if ! found=$(bash tests/matrix/find-python.sh "$h"); then
    echo "host Python $h: SKIPPED: this machine lacks it (pyenv's versions, /usr/bin, PATH)"
    skipped+=("host Python $h"); rows+=("host $h|none|SKIPPED|SKIPPED||"); return
  fi
  if [ -z "$host_core_venv" ]; then
    echo "host Python $h: SKIPPED: no ansible-core ran here (no .venv, no matrix venv) to lend its ansible-test"
    skipped+=("host Python $h (no ansible-core)"); rows+=("host $h|$("$found" -V | cut -d' ' -f2)|SKIPPED|SKIPPED||")
    return
  fi
  core=$host_core
  mkdir -p "$root/.matrix"
  sanity=- sanity_s=''
  if [ "$sanity_mode" != none ]; then
    log="$root/.matrix/host-python-$h.sanity.log"
    start=$SECONDS
    if PATH="$host_core_venv/bin:$PATH" bash tests/sanity/run.sh --host-python "$h" \
        > "$log" 2>&1; then sanity=passed
    else sanity=FAILED; tail -40 "$log"; fi
    sanity_s=$((SECONDS - start))
    echo "host Python $h: sanity (compile, import; ansible-test $core) $sanity in $sanity_s s (log $log)"
  fi
  units=- units_s='' summary=''
  if [ "$units_mode" != none ]; then
    start=$SECONDS
    log="$root/.matrix/host-python-$h.units.log"
    if PATH="$host_core_venv/bin:$PATH" bash tests/matrix/host-units.sh "$h" > "$log" 2>&1; then units=passed
    else units=FAILED; tail -40 "$log"; fi
    units_s=$((SECONDS - start))
    summary=$(tail -n1 "$log" | sed -E 's/^=+ //; s/ in [0-9.]+s.*//; s/, [0-9]+ (deselected|warnings?)//g')
    echo "host Python $h: units (module_utils of ansible-core $core) $units in $units_s s ($summary)"
    summary=": $summary"
  fi
  if [ "$sanity_mode" = none ] && [ "$units_mode" = none ]; then
    echo "host Python $h: $found (neither units nor compile and import asked for)"
  fi
  [ "$sanity" != FAILED ] && [ "$units" != FAILED ] || failed=$((failed + 1))
  rows+=("host $h|$("$found" -V | cut -d' ' -f2)|compile, import: $sanity|$units$summary|$sanity_s|$units_s")
}

# One row alone (run.sh --row ROW DIR, as the pool below starts it): its lines on stdout, its table row, what it
# skipped and whether it failed in DIR/ROW.*.
if [ -n "$row" ]; then
  case "$row" in host-*) host_row "${row#host-}" ;; *) version_row "$row" ;; esac
  printf '%s\n' "${rows[@]}" > "$rowdir/$row.row"
  [ ${#skipped[@]} -eq 0 ] || printf '%s\n' "${skipped[@]}" > "$rowdir/$row.skipped"
  echo "$failed" > "$rowdir/$row.failed"
  exit 0
fi

# The pool. Every row is its own process (run.sh --row), up to MATRIX_JOBS (default 2) at once: a row's time is
# mostly its tests' waits (sockets, timers, child processes), not CPU. As root, each row's unit tests run in a network
# namespace of their own (unshare --net, its loopback up, and /sys mounted again as ip netns exec does, so that
# /sys/class/net is that namespace's: MATRIX_UNITS_NS), so that two rows' tests binding the same loopback port never
# meet (the venvs are built outside it: pip needs the index); otherwise (not root, no unshare,
# MATRIX_JOBS=1) one row at a time (--units none: no unit tests, so the rows go side by side without a namespace).
# ansible-test sanity, which is CPU, runs one at a time per Python (a lock in tests/sanity/run.sh), and a row runs its
# units before it. The rows' output is printed in the matrix's order once they have all ended.
mkdir -p "$root/.matrix"
rowdir=$(mktemp -d "$root/.matrix/rows.XXXXXX")
trap 'rm -rf "$rowdir"' EXIT
jobs_max=${MATRIX_JOBS:-2}
isolated=
if [ "$jobs_max" -gt 1 ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null \
    && unshare --net --mount true 2>/dev/null; then
  isolated=1
elif [ "$units_mode" != none ]; then
  jobs_max=1
fi
order=()
for v in "${versions[@]}"; do order+=("$v"); done
late=()
for h in "${hosts[@]}"; do
  # the host rows lend .venv's ansible-test; without a .venv, the newest matrix venv's, once it is built
  if [ -n "$host_core_venv" ]; then order+=("host-$h"); else late+=("host-$h"); fi
done
echo "matrix: ${#order[@]} row(s), $jobs_max at a time$([ -n "$isolated" ] && [ "$units_mode" != none ] \
  && echo ", each one's unit tests in a netns")$([ "$units_mode" = none ] && echo ", no unit tests (--units none)")$(
  [ "$sanity_mode" = none ] && echo ", no sanity (--sanity none)")"
start_pool=$SECONDS
# --units lean: which versions run the whole unit suite (the oldest, and the first row of each controller Python that
# neither .venv nor an earlier row runs it on) and which the tests reaching ansible-core alone
declare -A scope_of=()
if [ "$units_mode" = lean ]; then
  covered=" "
  if [ "$skip_current" = 1 ] && [ -x "$root/.venv/bin/python" ]; then covered+="$(minor_of "$root/.venv/bin/python") "; fi
  for v in "${versions[@]}"; do
    read -r _ prefs _ <<<"$(grep -E "^$v[[:space:]]" <<<"$matrix")"
    p=$(bash tests/matrix/find-python.sh ${prefs//,/ }) || continue
    m=$(minor_of "$p")
    if [ "$v" = "$oldest" ] || [[ "$covered" != *" $m "* ]]; then scope_of[$v]=all; covered+="$m "; else scope_of[$v]=core; fi
  done
  echo "matrix: --units lean: the whole unit suite on $(for v in "${versions[@]}"; do [ "${scope_of[$v]:-}" = all ] \
    && echo -n "$v "; done)(and .venv's unit tier), the tests reaching ansible-core on the others"
fi
run_rows() {
  local r
  for r in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
    MATRIX_UNITS_SCOPE=${scope_of[$r]:-all} HOST_CORE_VENV=$host_core_venv HOST_CORE=$host_core MATRIX_UNITS_NS=$isolated \
      bash "$root/tests/matrix/run.sh" --row "$r" "$rowdir" $([ "$skip_current" = 1 ] && echo --skip-current) \
      --sanity "$sanity_mode" --units "$units_mode" > "$rowdir/$r.out" 2>&1 &
  done
  wait
}
collect() {
  local r
  for r in "$@"; do
    echo; cat "$rowdir/$r.out"
    if [ -s "$rowdir/$r.row" ]; then mapfile -t -O "${#rows[@]}" rows < "$rowdir/$r.row"
    else rows+=("$r|?|ended without a row|see above||"); failed=$((failed + 1)); fi
    [ -s "$rowdir/$r.skipped" ] && mapfile -t -O "${#skipped[@]}" skipped < "$rowdir/$r.skipped"
    failed=$((failed + $(cat "$rowdir/$r.failed" 2>/dev/null || echo 1)))
  done
}
run_rows "${order[@]}"
collect "${order[@]}"
if [ ${#late[@]} -gt 0 ]; then
  for v in "${versions[@]}"; do
    venv="$venvs/ansible-core-$v"
    [ -x "$venv/bin/python" ] && newer "$v" "$host_core" && host_core_venv=$venv host_core=$v
  done
  run_rows "${late[@]}"
  collect "${late[@]}"
fi
echo; echo "matrix: rows ran in $((SECONDS - start_pool)) s of wall time"
echo
printf '%-13s %-9s %-24s %-46s %8s %7s\n' "ansible-core" "Python" "sanity" "units" "sanity s" "units s"
for r in "${rows[@]}"; do
  IFS='|' read -r v py s u ss us <<<"$r"
  printf '%-13s %-9s %-24s %-46s %8s %7s\n' "$v" "$py" "$s" "$u" "$ss" "$us"
done
if [ ${#skipped[@]} -gt 0 ]; then
  echo "skipped (this machine lacks the Python): $(printf '%s; ' "${skipped[@]}" | sed 's/; $//')"
else
  echo "skipped: none (every version and host Python listed ran)"
fi
[ "$failed" -eq 0 ] || { echo "matrix: $failed row(s) failed"; exit 1; }
