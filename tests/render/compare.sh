#!/usr/bin/env bash
# Does this tree render every report file byte for byte as another one (the code before a change) does?
#
#   bash tests/render/compare.sh [OLD_TREE] [RUN_DIR ...]       (OLD_TREE default /work/wt/base)
#
# 1. The scenarios (tests/render/scenarios.py: a demo, collectives, the fabric lab, failed steps and gates) played
#    through each tree's callback: every report file of the run directory each writes must be the same; the new
#    tree's re-render of the old tree's run directory (its plan.json as the old code wrote it) must be the same too.
# 2. Every RUN_DIR given (a real run, e.g. make demo's, written by the old code), copied and re-rendered by each tree
#    with playbooks/render_report.yml: every report file the same.
# 3. The history of those runs (history_rebuild, history_runs/history_table, history_compare of each pair, as text
#    and JSON): the same through each tree's history filters.
# 4. Each RUN_DIR's plan.json (schema 1, as the old code wrote it) rewritten by this tree as schema 2 (each plan once):
#    the steps' plans made from the plans are the ones schema 1 stored, and every report file is the same.
# A copy is always rendered at the same path by both trees (report.json names its run directory). Prints each
# difference; exits 1 when there is one.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
old=$(cd "${1:-/work/wt/base}" && pwd)
shift || true
runs=("$@")
work=$(mktemp -d /tmp/aifabric-compare.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
python=$(command -v python)
files="report.json report.txt report.md flows.csv steps.csv junit.xml report.html"
status=0
same() {  # same LABEL DIR_A DIR_B: every report file of A and B alike
  local label=$1 a=$2 b=$3 f
  for f in $files; do
    if ! cmp -s "$a/$f" "$b/$f"; then
      echo "DIFFERS  $label: $f"; diff <(head -c 200000 "$a/$f") <(head -c 200000 "$b/$f") | head -20; status=1
    fi
  done
}
render() {  # render TREE DIR: the tree's render_report playbook on DIR, quietly
  (cd "$1" && ANSIBLE_CONFIG="$1/ansible.cfg" ansible-playbook playbooks/render_report.yml \
    -e "run_dir=$2" > "$work/render.log" 2>&1) || { echo "FAILED   render of $2 by $1"; tail -20 "$work/render.log"; status=1; }
}
history() {  # history TREE RUNS_DIR OUT: the history filters' answers over RUNS_DIR, paths and clocks made neutral
  "$python" - "$1" "$2" "$3" <<'EOF'
import glob, importlib, json, os, sys
tree, runs_dir, out = sys.argv[1:]
sys.path.insert(0, os.path.join(tree, ".collections"))
mod = importlib.import_module("ansible_collections.aifabric.lab.plugins.filter.history")
import ansible_collections.aifabric.lab.plugins.filter.history as h  # noqa
h._warn = lambda m: None
f = mod.FilterModule().filters()
db = os.path.join(runs_dir, "compare-history.sqlite")
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
    r.pop("recorded_at", None)
text.append(json.dumps(rows, indent=1, sort_keys=True))
open(out, "w").write("\n".join(text))
EOF
}

# 1. the scenarios, through each tree's callback
mkdir -p "$work/runs"
for tree in "$old" "$here"; do
  name=$([ "$tree" = "$old" ] && echo old || echo new)
  rm -rf "$work/runs"
  "$python" "$here/tests/render/scenarios.py" --tree "$tree" --out "$work/runs" > "$work/$name.log" 2>&1 \
    || { echo "FAILED   scenarios with $tree"; tail -30 "$work/$name.log"; exit 1; }
  mv "$work/runs" "$work/$name"
done
count=0
for a in "$work"/old/*/; do
  a=${a%/}; run=$(basename "$a"); b="$work/new/$run"
  same "scenario $run: the callback's files" "$a" "$b"
  # the old run directory (plan.json as the old code wrote it), re-rendered by this tree where it was written
  rm -rf "$work/runs"; mkdir -p "$work/runs"; cp -a "$a" "$work/runs/$run"
  render "$here" "$work/runs/$run"
  same "scenario $run: the old run directory re-rendered by this tree" "$a" "$work/runs/$run"
  count=$((count + 1))
done
echo "scenarios: $count run directories compared (callback, and re-render of the old record)"
for name in old new; do
  rm -rf "$work/runs"; cp -a "$work/$name" "$work/runs"; rm -f "$work/runs/history.sqlite"*
  history "$([ $name = old ] && echo "$old" || echo "$here")" "$work/runs" "$work/history-$name.txt"
done
cmp -s "$work/history-old.txt" "$work/history-new.txt" \
  || { echo "DIFFERS  scenarios: the history"; diff "$work/history-old.txt" "$work/history-new.txt" | head -30; status=1; }

# 2. real run directories, re-rendered by each tree
if [ ${#runs[@]} -gt 0 ]; then
  rm -rf "$work/runs"; mkdir -p "$work/runs"
  for r in "${runs[@]}"; do
    run=$(basename "$r")
    for tree in "$old" "$here"; do
      name=$([ "$tree" = "$old" ] && echo old || echo new)
      rm -rf "$work/runs/$run"; cp -a "$r" "$work/runs/$run"
      render "$tree" "$work/runs/$run"
      mkdir -p "$work/real-$name"; rm -rf "$work/real-$name/$run"; mv "$work/runs/$run" "$work/real-$name/$run"
    done
    same "run $run: re-rendered" "$work/real-old/$run" "$work/real-new/$run"
  done
  echo "runs: ${#runs[@]} run directories re-rendered by both trees"
  # 3. their history, through each tree's filters
  for name in old new; do
    rm -rf "$work/runs"; cp -a "$work/real-old" "$work/runs"
    history "$([ $name = old ] && echo "$old" || echo "$here")" "$work/runs" "$work/real-history-$name.txt"
  done
  cmp -s "$work/real-history-old.txt" "$work/real-history-new.txt" \
    || { echo "DIFFERS  runs: the history"; diff "$work/real-history-old.txt" "$work/real-history-new.txt" | head -30; status=1; }
fi
# 4. schema 1 rewritten as schema 2 by this tree
for r in "${runs[@]}"; do
  "$python" - "$here" "$r" "$work/v2" <<'EOF' || status=1
import os, shutil, sys
here, src, work = sys.argv[1:]
sys.path.insert(0, os.path.join(here, ".collections"))
from ansible_collections.aifabric.lab.plugins.module_utils._atomic import write_json
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import analyze_run, report_files
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import step_plans
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import PLAN_FILE, plan_record, read_plan

path = os.path.join(work, os.path.basename(src))
shutil.rmtree(path, ignore_errors=True)
shutil.copytree(src, path)
experiments, stored, lab = read_plan(path) or ([], {}, {})
made = {}
for experiment in experiments:
    made.update(step_plans(experiment))
before = report_files(analyze_run(path))
write_json(os.path.join(path, PLAN_FILE), plan_record(experiments, lab))
after = report_files(analyze_run(path))
differ = sorted(n for n in before if before[n] != after[n])
if stored and {n: s.as_dict() for n, s in made.items()} != {n: s.as_dict() for n, s in stored.items()}:
    print("DIFFERS  run %s: the steps' plans made from schema 2 are not the ones schema 1 stored" % os.path.basename(src))
    sys.exit(1)
if differ:
    print("DIFFERS  run %s: rewritten as schema 2: %s" % (os.path.basename(src), ", ".join(differ)))
    sys.exit(1)
EOF
done
[ ${#runs[@]} -gt 0 ] && echo "runs: plan.json rewritten as schema 2 by this tree renders the same (${#runs[@]} run directories)"
[ $status -eq 0 ] && echo "every report file and the history: the same"
exit $status
