# aifabric.lab: `make demo` and `make test` set everything up on a fresh Debian 12 machine (as root) and run.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# .venv's Python: the first of the newest ansible-core's Pythons (the last line of tests/matrix/ansible-core.txt:
# 3.13, then 3.12) found in pyenv's versions, /usr/bin or PATH (tests/matrix/find-python.sh); on a machine with none of
# them (a bare Debian 12: 3.11), /usr/bin/python3, and .venv runs the newest ansible-core of the matrix that supports
# that Python. `make setup PYTHON=/path/to/python3.12` chooses one.
MATRIX         := tests/matrix/ansible-core.txt
SPACE          := $() $()
NEWEST_CORE    := $(shell awk '/^[0-9]/ {v = $$1} END {print v}' $(MATRIX))
NEWEST_PYTHONS := $(shell awk '/^[0-9]/ {p = $$2} END {gsub(",", " ", p); print p}' $(MATRIX))
ifeq ($(origin PYTHON),undefined)
PYTHON := $(or $(shell bash tests/matrix/find-python.sh $(NEWEST_PYTHONS)),/usr/bin/python3)
endif
PYTHON_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)
# the ansible-core .venv runs: the newest of the matrix whose supported controller Pythons (third column) hold PYTHON's
CORE := $(shell awk -v v=$(PYTHON_VERSION) 'BEGIN {split(v, p, "."); m = p[2] + 0} \
  /^[0-9]/ {split($$3, r, "-"); split(r[1], lo, "."); split(r[2], hi, "."); if (m >= lo[2] + 0 && m <= hi[2] + 0) c = $$1} \
  END {print c}' $(MATRIX))
PY_STAMP    := .stamps/python-$(PYTHON_VERSION)-$(subst /,_,$(PYTHON))
VENV        := $(CURDIR)/.venv
BIN         := $(VENV)/bin
COLLECTIONS := $(CURDIR)/.collections
COLL_LINK   := $(COLLECTIONS)/ansible_collections/aifabric/lab
APT_PKGS    := python3-venv iproute2 iperf3 procps
TEST_PKGS   := chromium chromium-driver
VMLAB_PKGS  := qemu-system-x86 qemu-utils debootstrap e2fsprogs openssh-client linux-source-6.1 xz-utils make gcc \
               bc flex bison libelf-dev
# the ECN marker's BPF program is built here, never on a host (`make bpf`): Debian 12's clang (its llvm comes with it)
BPF_PKGS    := clang-14
BPF_CLANG   := clang-14
VMLAB_CACHE ?= /var/cache/aifabric-vmlab
export AIFABRIC_VMLAB_CACHE := $(VMLAB_CACHE)
# the ansible-core matrix's venvs (tests/matrix/run.sh): as root in a cache that a new clone finds built (each is
# rebuilt when its pins or its Python change), else in the checkout's .matrix
MATRIX_VENVS ?= $(if $(filter 0,$(shell id -u)),/var/cache/aifabric-matrix,$(CURDIR)/.matrix)
export AIFABRIC_MATRIX_VENVS := $(MATRIX_VENVS)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(BIN):$(PATH)
export PYTHONDONTWRITEBYTECODE := 1
# `make lab-up LAB_VARS='lab_line_rate=4gbit'`: variables for the lab's playbooks, key=value words (make's own -e is
# something else: it lets the environment override the Makefile)
LAB_VARS    ?=
LAB_EXTRA    = $(if $(strip $(LAB_VARS)),-e '$(LAB_VARS)')

.PHONY: help setup setup-test bpf congestion-demo convergence demo job sweep test lab-up lab-down units integration molecule sanity lint vmlab-demo vmlab-job \
        benchmarks build install-check render vmlab-setup vmlab-image vmlab-proof vmlab-up vmlab-down vmlab-test \
        history history-rebuild history-export compare fabric-demo fabric-seeds census test-matrix docs release ee clean clean-matrix clean-runs \
        clean-vmlab

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

# $(call apt_ensure,PACKAGES): install the packages that are missing (apt-get update first), then stamp.
define apt_ensure
	@mkdir -p .stamps
	@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "apt: installing $$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@touch $@
endef

.stamps/apt: Makefile
	$(call apt_ensure,$(APT_PKGS))

.stamps/apt-bpf: Makefile
	$(call apt_ensure,$(BPF_PKGS))

.stamps/apt-vmlab: Makefile
	$(call apt_ensure,$(VMLAB_PKGS))

# the browser that tests/browser/check_html.py opens report.html in (headless), and its WebDriver
.stamps/apt-test: Makefile
	$(call apt_ensure,$(TEST_PKGS))

# a new stamp whenever PYTHON (its path or version) changes, so that .venv is made again with it
$(PY_STAMP):
	@mkdir -p .stamps && rm -f .stamps/python-* && touch $@

# constraints.txt with .venv's ansible-core: the pinned newest, or the newest the found Python runs
.stamps/constraints.txt: constraints.txt $(MATRIX) $(PY_STAMP)
	@test -n "$(PYTHON_VERSION)" || { echo "make: $(PYTHON) does not run (PYTHON=...)"; exit 1; }
	@test -n "$(CORE)" || { echo "make: no ansible-core of $(MATRIX) supports Python $(PYTHON_VERSION) ($(PYTHON))"; \
	  exit 1; }
	@sed 's/^ansible-core==.*/ansible-core==$(CORE)/' constraints.txt > $@
	@if [ "$(CORE)" != "$(NEWEST_CORE)" ]; then \
	  echo "make: .venv runs ansible-core $(CORE) on $(PYTHON) ($(PYTHON_VERSION)), not the newest $(NEWEST_CORE)," \
	    "which needs Python $(subst $(SPACE), or ,$(NEWEST_PYTHONS)) (none found, or PYTHON chose another);" \
	    "the matrix skips the versions whose Pythons this machine lacks"; fi

.stamps/venv: requirements.txt .stamps/constraints.txt .stamps/apt
	@if [ -x $(BIN)/python ] && [ "$$($(BIN)/python -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')" \
	  != "$(PYTHON_VERSION)" ]; then echo "make: .venv is made again, on $(PYTHON) ($(PYTHON_VERSION))"; \
	  rm -rf $(VENV); fi
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install -q --disable-pip-version-check -c .stamps/constraints.txt -r requirements.txt ansible-core
	@touch $@

.stamps/venv-test: requirements-test.txt .stamps/constraints.txt .stamps/venv .stamps/apt-test
	@$(BIN)/pip install -q --disable-pip-version-check -c .stamps/constraints.txt -r requirements-test.txt
	@touch $@

.stamps/venv-docs: requirements-docs.txt .stamps/venv-test
	@$(BIN)/pip install -q --disable-pip-version-check -c .stamps/constraints.txt -r requirements-docs.txt
	@touch $@

$(COLL_LINK):
	@mkdir -p $(dir $(COLL_LINK))
	@ln -sfn $(CURDIR) $(COLL_LINK)

setup: .stamps/venv $(COLL_LINK) ## install what the demo needs (apt, pinned pip into .venv)

setup-test: setup .stamps/venv-test .stamps/venv-docs ## install the test tooling too (and Sphinx for the docsite)

demo: setup ## run the seed's barrier experiment on the embedded netns lab (UNTHROTTLED=1: nobody throttled; LAB_VARS)
	@trap 'ansible-playbook playbooks/lab_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook playbooks/demo.yml $(if $(UNTHROTTLED),-e '{"barrier_throttles": {}}') $(LAB_EXTRA)

# the object is turned into Python (the instructions, the map's relocations, the source's SHA-256) that the modules
# carry to the hosts; tests/unit/plugins/module_utils/test_ecn.py checks the hash and, with clang-14, the bytes
bpf: .stamps/apt-bpf ## build the ECN marker (bpf/ecn_marker.bpf.c, clang-14) into plugins/module_utils/_ecn_program.py
	@mkdir -p .stamps
	@$(BPF_CLANG) -O2 -g0 -target bpf -mcpu=v3 -Wall -Werror -c bpf/ecn_marker.bpf.c -o .stamps/ecn_marker.bpf.o
	@python3 bpf/embed.py .stamps/ecn_marker.bpf.o bpf/ecn_marker.bpf.c plugins/module_utils/_ecn_program.py
	@echo "bpf: plugins/module_utils/_ecn_program.py from bpf/ecn_marker.bpf.c"

# The small grid holds the 8:1 incast at 200KB, tail drop and marked, side by side (its report's congestion table);
# CONGESTION_GRID='{"incast_grid": {"workers": [2, 4, 8], "buffers": ["50KB", "200KB"]}}' for more (a 50KB cell that
# collapses takes 15 to 60 s a step).
CONGESTION_GRID ?= {"incast_grid": {"workers": [2, 4, 8], "buffers": ["200KB"]}}

congestion-demo: setup ## the incast grid (N 2,4,8 at 200KB; tail drop and ECN) on netns8, then the seed's barrier on marked ports
	@trap 'ansible-playbook -i inventories/netns8 playbooks/lab_down.yml >/dev/null; \
	  ansible-playbook -i inventories/netns playbooks/lab_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook -i inventories/netns8 playbooks/incast.yml -e experiment_progress=false \
	    -e '$(CONGESTION_GRID)' $(LAB_EXTRA) && \
	  ansible-playbook -i inventories/netns8 playbooks/lab_down.yml >/dev/null && \
	  ansible-playbook -i inventories/netns playbooks/marked_barrier.yml -e experiment_progress=false $(LAB_EXTRA)

convergence: setup ## convergence (draft section 7.3): M flows to one sink, M more at T0, on 8 netns workers (CONVERGENCE_VARS)
	@trap 'ansible-playbook -i inventories/netns8 playbooks/lab_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook -i inventories/netns8 playbooks/convergence.yml -e experiment_progress=false \
	    $(if $(CONVERGENCE_VARS),-e '$(CONVERGENCE_VARS)')

fabric-demo: setup ## elephants on a 2-leaf, 4-spine fabric: collisions, and what spreads them, side by side
	@trap 'ansible-playbook -i inventories/fabric playbooks/fabric_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook -i inventories/fabric playbooks/fabric_demo.yml -e experiment_progress=false

fabric-seeds: setup ## the fabric's step over 20 hash seeds: measured vs simulator vs formula (SEEDS=20)
	@trap 'ansible-playbook -i inventories/fabric playbooks/fabric_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook -i inventories/fabric playbooks/fabric_up.yml >/dev/null && \
	  ansible-playbook -i inventories/fabric playbooks/fabric_seeds.yml -e fabric_seeds=$(or $(SEEDS),20)

census: setup ## the seed's census: the barrier step with mice beside it, the sink's conntrack table counted
	@trap 'ansible-playbook playbooks/lab_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook playbooks/lab_up.yml >/dev/null && \
	  ansible-playbook playbooks/census.yml -e experiment_progress=false

job: setup ## a training job on 8 netns workers: 20 iterations of ring AllReduce, one path throttled (JOB_VARS)
	@trap 'ansible-playbook -i inventories/netns8 playbooks/lab_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook -i inventories/netns8 playbooks/lab_up.yml >/dev/null && \
	  ansible-playbook -i inventories/netns8 playbooks/job.yml -e experiment_progress=false $(if $(JOB_VARS),-e '$(JOB_VARS)')

sweep: setup ## nccl-tests-style size sweep of ring and tree AllReduce on 8 netns workers, with the prediction
	@trap 'ansible-playbook -i inventories/netns8 playbooks/lab_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook -i inventories/netns8 playbooks/lab_up.yml >/dev/null && \
	  ansible-playbook -i inventories/netns8 playbooks/sweep.yml -e experiment_progress=false $(if $(SWEEP_VARS),-e '$(SWEEP_VARS)')

lab-up: setup ## bring the netns lab up, or change it in place (LAB_VARS='lab_line_rate=4gbit lab_mtu=1500')
	ansible-playbook playbooks/lab_up.yml $(LAB_EXTRA)

lab-down: setup ## remove the netns lab
	ansible-playbook playbooks/lab_down.yml

render: setup ## rebuild a report from a run directory: make render RUN=runs/<dir>
	ansible-playbook playbooks/render_report.yml -e run_dir=$(RUN)

history: setup ## the recorded runs with their step time, straggler, idle share: make history [N=20]
	ansible-playbook playbooks/history.yml $(if $(N),-e limit=$(N))

history-rebuild: setup ## index every run directory under runs/ again (runs/history.sqlite)
	ansible-playbook playbooks/history.yml -e rebuild=true $(if $(N),-e limit=$(N))

history-export: setup ## the history for other tools, a row per step: make history-export [FORMAT=jsonl|csv] [OUT=file]
	ansible-playbook playbooks/history_export.yml $(if $(FORMAT),-e format=$(FORMAT)) $(if $(OUT),-e out=$(OUT))

compare: setup ## what changed between two runs: make compare [A=latest~1] [B=latest] (ids, run dirs, latest~N)
	ansible-playbook playbooks/compare.yml $(if $(A),-e a=$(A)) $(if $(B),-e b=$(B))

vmlab-setup: setup .stamps/apt-vmlab ## install what the VM lab needs (qemu, debootstrap, kernel source)

vmlab-image: vmlab-setup ## build the VM-lab guest image into $(VMLAB_CACHE) (only when its inputs changed)
	lab/vm/build-image.sh $(VMLAB_CACHE)

vmlab-proof: vmlab-image ## boot two QEMU guests, prove soft-RoCE, netdevsim SR-IOV and vfio-pci over SSH, stop them
	@trap 'ansible-playbook -i inventories/vmlab/hosts.yml playbooks/vmlab_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook -i inventories/vmlab/hosts.yml playbooks/vmlab_up.yml playbooks/vmlab_proof.yml

vmlab-demo: vmlab-image ## the seed's barrier step with real verbs (soft-RoCE, perftest, tc) on the VM lab, then stop it
	@trap 'ansible-playbook -i inventories/vmlab/hosts.yml playbooks/vmlab_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook -i inventories/vmlab/hosts.yml playbooks/vmlab_demo.yml

vmlab-job: vmlab-image ## a training job over RDMA verbs and over TCP beside perftest's transfers, on the VM lab
	@trap 'ansible-playbook -i inventories/vmlab-job/hosts.yml playbooks/vmlab_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook -i inventories/vmlab-job/hosts.yml playbooks/vmlab_job.yml

vmlab-up: vmlab-image ## boot the VM lab (and leave it up)
	ansible-playbook -i inventories/vmlab/hosts.yml playbooks/vmlab_up.yml

vmlab-down: setup ## stop the VM lab
	ansible-playbook -i inventories/vmlab/hosts.yml playbooks/vmlab_down.yml

vmlab-test: vmlab-setup setup-test ## the VM tier of the tests alone
	bash tests/vmlab/run.sh

test: setup-test .stamps/apt-vmlab ## run the whole test suite (lint, sanity, units, ansible-core matrix, integration, molecule, VM lab)
	@bash tests/run-all.sh

test-matrix: setup-test ## every ansible-core's units and sanity (the shipped content but on the newest), the hosts' Pythons (V=, SANITY=all)
	bash tests/matrix/run.sh $(if $(SANITY),--sanity $(SANITY)) $(V)

docs: setup-test ## build the collection's docsite (antsibull-docs, Sphinx) into build/docsite/build/html
	bash docs/docsite/build.sh

release: setup-test ## the changelog's fragments become release VERSION (galaxy.yml too): make release VERSION=x.y.z
	bash tests/release/release.sh $(VERSION)

ee: setup-test ## write the example execution environment's build context into build/ee (ansible-builder create)
	$(BIN)/ansible-builder create -f ee/execution-environment.yml --context build/ee

units: setup-test ## unit tests
	$(BIN)/pytest -q tests/unit

integration: setup-test ## integration targets on real namespaces
	bash tests/integration/run.sh

molecule: setup-test ## molecule scenarios of the netns_lab and fabric_lab roles
	cd roles/netns_lab && $(BIN)/molecule test
	cd roles/fabric_lab && $(BIN)/molecule test

sanity: setup-test ## ansible-test sanity
	bash tests/sanity/run.sh

lint: setup-test ## ruff and ansible-lint (production profile)
	$(BIN)/ruff check plugins tests benchmarks
	$(BIN)/ansible-lint --profile production roles playbooks

benchmarks: setup-test ## start skew, goodput, engine, progress, flow-simulator and fabric-lab figures (printed, not asserted)
	$(BIN)/python benchmarks/start_skew.py
	$(BIN)/python benchmarks/goodput.py
	$(BIN)/python benchmarks/engine_vs_iperf3.py
	$(BIN)/python benchmarks/progress.py
	$(BIN)/python benchmarks/simulator.py
	$(BIN)/python benchmarks/fabric.py

install-check: setup-test ## build the collection, install it into an empty path and use it from there
	bash tests/build/install_check.sh

build: setup ## build the collection tarball into build/
	@mkdir -p build
	ansible-galaxy collection build --force --output-path build .

# What make made in the checkout. runs/ holds measurements: `make clean` keeps it unless CONFIRM=1 (or make clean-runs);
# the VM image in $(VMLAB_CACHE) is only removed by make clean-vmlab.
clean: ## remove .venv, .collections, .stamps, .matrix, build/ (runs/ too with CONFIRM=1; the matrix's venvs: clean-matrix)
	rm -rf $(VENV) $(COLLECTIONS) .stamps .matrix build .ansible tests/output
	@if [ "$(CONFIRM)" = 1 ]; then rm -rf runs && echo "runs/ removed"; \
	elif [ -d runs ]; then echo "runs/ kept ($$(find runs -mindepth 1 -maxdepth 1 -type d | wc -l) runs):" \
	  "make clean CONFIRM=1 or make clean-runs removes it"; fi

clean-runs: ## remove runs/: every run's measurements, reports and the history (runs/history.sqlite)
	rm -rf runs

clean-matrix: ## remove the ansible-core matrix's venvs ($(MATRIX_VENVS); make test-matrix builds them again)
	rm -rf $(MATRIX_VENVS)

clean-vmlab: ## stop the VM-lab guests, remove $(VMLAB_CACHE) (image, SSH key: make vmlab-image builds them again)
	bash lab/vm/vm.sh stop
	rm -rf $(VMLAB_CACHE)
