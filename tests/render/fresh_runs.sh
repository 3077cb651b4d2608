#!/usr/bin/env bash
# Fresh runs of the code before a change, re-rendered by this tree: does every report file come out byte for byte
# as the old code wrote and re-renders it, and does the history compare the runs as before? (Issue 25's Done-when,
# the half the checked-in fixtures of test_golden.py cannot cover.) Not part of make test: it needs the old checkout,
# and `produce` needs the lab.
#
#   bash tests/render/fresh_runs.sh OLD_TREE OLD_VENV RUNS [produce]
#
# OLD_TREE  a checkout of the old code (git worktree add /work/wt/base 69899f6), set up with its own Makefile's
#           `make setup` (it pins its own ansible-core); OLD_VENV its venv (OLD_TREE/.venv).
# RUNS      where the old code's run directories are kept: RUNS/<label>/<run directory>/ (each label a runs_dir).
# produce   first make them with the old code, one lab at a time under the lab lock (flock LAB_LOCK, default
#           /work/wt/lab.lock): `make demo` (RUNS/demo), `make fabric-demo` (RUNS/fabric-demo) and
#           playbooks/collective.yml with its default vars on the lab its header names, inventories/netns8
#           (lab_up, the playbook, lab_down; RUNS/collective). The logs go to RUNS/logs/.
#
# For every run directory, each report file the old code's callback wrote (ORIG) is compared with
#   OLD  the old tree's re-render (playbooks/render_report.yml, its own venv),
#   NEW  this tree's re-render (this tree's .venv, else the PATH's ansible-playbook),
#   NEW@OLDVENV  this tree's re-render with the old venv's ansible-core and Python, and OLD@NEWVENV the old tree's
#        with this tree's (a difference between OLD and NEW that NEW@OLDVENV and OLD@NEWVENV do not have comes from
#        the Python or ansible-core, not from the code: sum() of floats is compensated from Python 3.12).
# Every render works on a copy at one path (report.json names its run directory), so the originals are untouched;
# ORIG is compared after its own path is replaced by that one. Then the history of the original run directories,
# through each tree's own venv: the filters (history_rebuild, history_runs/history_table, history_compare of every
# pair as text and JSON; also this tree's with the old venv) and the playbooks (history.yml -e rebuild=true,
# compare.yml for every pair: the files it writes under compare/). Prints a line per file and comparison; exits 1 when anything differs.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 3 ] || { sed -n '2,30p' "$0"; exit 2; }
old=$(cd "$1" && pwd) || exit 2
old_venv=$(cd "$2" && pwd) || exit 2
runs_root=$(mkdir -p "$3" && cd "$3" && pwd) || exit 2
mode=${4:-}
new_bin=$here/.venv/bin
[ -x "$new_bin/ansible-playbook" ] || new_bin=$(dirname "$(command -v ansible-playbook)")
for t in "$old" "$here"; do
  [ -e "$t/.collections/ansible_collections/aifabric/lab" ] \
    || { echo "$t has no .collections/ansible_collections/aifabric/lab link (make setup, or HELPERS.md's ln)"; exit 2; }
done
export PYTHONDONTWRITEBYTECODE=1

if [ "$mode" = produce ]; then
  mkdir -p "$runs_root"/{demo,fabric-demo,collective,logs}
  lock=${LAB_LOCK:-/work/wt/lab.lock}
  in_old() {  # in_old LABEL COMMAND...: COMMAND in the old tree with its venv, writing runs into RUNS/LABEL
    local label=$1; shift
    (cd "$old" && env PATH="$old_venv/bin:$PATH" ANSIBLE_CONFIG="$old/ansible.cfg" \
      AIFABRIC_RUNS_DIR="$runs_root/$label" flock "$lock" "$@") > "$runs_root/logs/$label.log" 2>&1
    echo "produced $label: exit $? ($runs_root/logs/$label.log)"
  }
  in_old demo make demo
  in_old fabric-demo make fabric-demo
  in_old collective bash -c 'trap "ansible-playbook -i inventories/netns8 playbooks/lab_down.yml >/dev/null 2>&1" EXIT
    ansible-playbook -i inventories/netns8 playbooks/lab_up.yml >/dev/null &&
    ansible-playbook -i inventories/netns8 playbooks/collective.yml'
fi

work=$(mktemp -d /tmp/aifabric-fresh.XXXXXX)
trap '[ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
status=0
mapfile -t run_dirs < <(find "$runs_root" -mindepth 2 -maxdepth 2 -type d -name '2*' -exec test -d '{}/flows' ';' -print \
  | sort)
[ ${#run_dirs[@]} -gt 0 ] || { echo "no run directories under $runs_root/<label>/"; exit 1; }

render() {  # render TREE BIN DIR: TREE's render_report playbook on DIR, with the ansible-playbook of BIN
  (cd "$1" && env PATH="$2:$PATH" ANSIBLE_CONFIG="$1/ansible.cfg" ansible-playbook playbooks/render_report.yml \
    -e "run_dir=$3" > "$work/render.log" 2>&1) \
    || { echo "FAILED   render of $3 by $1 ($2)"; tail -20 "$work/render.log"; status=1; }
}
report_files() {  # the report files the old callback wrote in DIR (what a render rewrites)
  (cd "$1" && ls -p | grep -v / | grep -E '^(report\.|flows\.csv$|steps\.csv$|junit\.xml$)')
}
cmp_line() {  # cmp_line LABEL A B: identical, or differs with the first lines of the diff
  if cmp -s "$2" "$3"; then echo "identical  $1"; else
    echo "DIFFERS    $1"; diff "$2" "$3" | head -12 | sed 's/^/           /'
    status=1
  fi
}

spot=$work/spot
for r in "${run_dirs[@]}"; do
  label=$(basename "$(dirname "$r")")/$(basename "$r")
  name=$(echo "$label" | tr / _)
  for variant in old new newold oldnew; do
    rm -rf "$spot"; mkdir -p "$spot"; cp -a "$r" "$spot/run"
    case $variant in
      old) render "$old" "$old_venv/bin" "$spot/run" ;;
      new) render "$here" "$new_bin" "$spot/run" ;;
      newold) render "$here" "$old_venv/bin" "$spot/run" ;;
      oldnew) render "$old" "$new_bin" "$spot/run" ;;
    esac
    mkdir -p "$work/$variant"; mv "$spot/run" "$work/$variant/$name"
  done
  mkdir -p "$work/orig/$name"
  for f in $(report_files "$r"); do
    # the callback wrote its files at the run's own path; the renders at $spot/run
    python3 -c 'import sys; src, dst, a, b = sys.argv[1:]; open(dst, "wb").write(open(src, "rb").read().replace(a.encode(), b.encode()))' \
      "$r/$f" "$work/orig/$name/$f" "$r" "$spot/run"
  done
  echo "== $label ($(report_files "$r" | wc -l) report files)"
  for f in $(report_files "$r"); do
    cmp_line "$f: ORIG vs OLD (the old code's callback and its make render)" "$work/orig/$name/$f" "$work/old/$name/$f"
    cmp_line "$f: OLD vs NEW (make render before and after)" "$work/old/$name/$f" "$work/new/$name/$f"
    cmp_line "$f: ORIG vs NEW" "$work/orig/$name/$f" "$work/new/$name/$f"
    cmp_line "$f: OLD vs NEW@OLDVENV (the code alone, on the old Python and ansible-core)" "$work/old/$name/$f" \
      "$work/newold/$name/$f"
    cmp_line "$f: OLD@NEWVENV vs NEW (the code alone, on this tree's Python and ansible-core)" \
      "$work/oldnew/$name/$f" "$work/new/$name/$f"
  done
done

# the history of the original run directories, through each tree and its venv
history_filters() {  # history_filters TREE PYTHON RUNS_DIR OUT
  "$2" - "$1" "$3" "$4" <<'EOF'
import importlib, json, os, sys
tree, runs_dir, out = sys.argv[1:]
sys.path.insert(0, os.path.join(tree, ".collections"))
mod = importlib.import_module("ansible_collections.aifabric.lab.plugins.filter.history")
mod._warn = lambda m: None
f = mod.FilterModule().filters()
db = os.path.join(runs_dir, "fresh-history.sqlite")
f["history_rebuild"](runs_dir, db)
rows = f["history_runs"](db, runs_dir=runs_dir, sync=False)
text = [f["history_table"](rows)]
ids = [r["id"] for r in rows]
for a in ids:
    for b in ids:
        if a != b:
            diff = f["history_compare"](db, a, b, runs_dir)
            text.append(f["history_compare_text"](diff))
            text.append(json.dumps(diff, indent=1, sort_keys=True))
for r in rows:
    r.pop("recorded_at", None)  # when it was indexed: now
text.append(json.dumps(rows, indent=1, sort_keys=True))
open(out, "w").write("\n".join(text) + "\n")
print(" ".join(str(i) for i in ids))
EOF
}
history_playbooks() {  # history_playbooks TREE BIN RUNS_DIR IDS OUT_DIR: make history-rebuild, make compare A= B=
  local a b
  (cd "$1" && export PATH="$2:$PATH" ANSIBLE_CONFIG="$1/ansible.cfg"
   ansible-playbook playbooks/history.yml -e rebuild=true -e "runs_dir=$3" > "$5.history.log" 2>&1 || echo "FAILED   history.yml of $1"
   for a in $4; do for b in $4; do
     [ "$a" = "$b" ] || ansible-playbook playbooks/compare.yml -e "runs_dir=$3" -e "a=$a" -e "b=$b" >> "$5.compare.log" 2>&1 \
       || echo "FAILED   compare.yml $a $b of $1"
   done; done)
  mkdir -p "$5"; cp -a "$3/compare/." "$5/" 2>/dev/null || true
}
hist=$work/history/runs
for variant in old new; do
  rm -rf "$hist"; mkdir -p "$hist"
  for r in "${run_dirs[@]}"; do cp -a "$r" "$hist/"; done
  rm -f "$hist"/*/history.sqlite*
  if [ $variant = old ]; then tree=$old bin=$old_venv/bin; else tree=$here bin=$new_bin; fi
  ids=$(history_filters "$tree" "$bin/python" "$hist" "$work/history-$variant.txt") || { echo "FAILED   history filters of $tree"; status=1; }
  rm -f "$hist/history.sqlite"*; history_playbooks "$tree" "$bin" "$hist" "$ids" "$work/compare-$variant"
done
echo "== history of ${#run_dirs[@]} run directories (ids: $ids)"
cmp_line "history filters: table, every pair compared (text, JSON), the rows: OLD vs NEW" "$work/history-old.txt" \
  "$work/history-new.txt"
rm -rf "$hist"; mkdir -p "$hist"
for r in "${run_dirs[@]}"; do cp -a "$r" "$hist/"; done
rm -f "$hist"/*/history.sqlite*
history_filters "$here" "$old_venv/bin/python" "$hist" "$work/history-newold.txt" > /dev/null \
  || { echo "FAILED   history filters of $here on $old_venv"; status=1; }
cmp_line "history filters: OLD vs NEW@OLDVENV" "$work/history-old.txt" "$work/history-newold.txt"
rm -f "$hist/history.sqlite"* "$hist/fresh-history.sqlite"; rm -rf "$hist/compare"
history_playbooks "$here" "$old_venv/bin" "$hist" "$ids" "$work/compare-newold"
for f in $(cd "$work/compare-old" && ls); do
  cmp_line "make compare: compare/$f: OLD vs NEW@OLDVENV" "$work/compare-old/$f" "$work/compare-newold/$f"
done
for f in $(cd "$work/compare-old" && ls); do
  cmp_line "make compare: compare/$f: OLD vs NEW" "$work/compare-old/$f" "$work/compare-new/$f"
done
[ "$(cd "$work/compare-old" && ls)" = "$(cd "$work/compare-new" && ls)" ] || { echo "DIFFERS    make compare: the files written"; status=1; }
[ $status -eq 0 ] && echo "every report file and the history: the same" || echo "something differs (above)"
exit $status
