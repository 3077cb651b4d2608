# aifabric.lab: `make demo` and `make test` set everything up on a fresh Debian 12 machine (as root) and run.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON      ?= /usr/bin/python3
VENV        := $(CURDIR)/.venv
BIN         := $(VENV)/bin
COLLECTIONS := $(CURDIR)/.collections
COLL_LINK   := $(COLLECTIONS)/ansible_collections/aifabric/lab
APT_PKGS    := python3-venv iproute2 iperf3 procps
TEST_PKGS   := chromium chromium-driver
VMLAB_PKGS  := qemu-system-x86 qemu-utils debootstrap e2fsprogs openssh-client linux-source-6.1 xz-utils make gcc \
               bc flex bison libelf-dev
VMLAB_CACHE ?= /var/cache/aifabric-vmlab
export AIFABRIC_VMLAB_CACHE := $(VMLAB_CACHE)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(BIN):$(PATH)
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: help setup setup-test demo test lab-up lab-down units integration molecule sanity lint vmlab-demo \
        benchmarks build install-check render vmlab-setup vmlab-image vmlab-proof vmlab-up vmlab-down vmlab-test \
        history history-rebuild compare fabric-demo fabric-seeds census test-matrix docs release ee

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

.stamps/apt-vmlab: Makefile
	$(call apt_ensure,$(VMLAB_PKGS))

# the browser that tests/browser/check_html.py opens report.html in (headless), and its WebDriver
.stamps/apt-test: Makefile
	$(call apt_ensure,$(TEST_PKGS))

.stamps/venv: requirements.txt constraints.txt .stamps/apt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install -q --disable-pip-version-check -c constraints.txt -r requirements.txt ansible-core
	@touch $@

.stamps/venv-test: requirements-test.txt constraints.txt .stamps/venv .stamps/apt-test
	@$(BIN)/pip install -q --disable-pip-version-check -r requirements-test.txt
	@touch $@

.stamps/venv-docs: requirements-docs.txt .stamps/venv-test
	@$(BIN)/pip install -q --disable-pip-version-check -r requirements-docs.txt
	@touch $@

$(COLL_LINK):
	@mkdir -p $(dir $(COLL_LINK))
	@ln -sfn $(CURDIR) $(COLL_LINK)

setup: .stamps/venv $(COLL_LINK) ## install what the demo needs (apt, pinned pip into .venv)

setup-test: setup .stamps/venv-test .stamps/venv-docs ## install the test tooling too (and Sphinx for the docsite)

demo: setup ## run the seed's barrier experiment on the embedded netns lab (UNTHROTTLED=1: nobody throttled)
	@trap 'ansible-playbook playbooks/lab_down.yml >/dev/null' EXIT INT TERM; \
	  ansible-playbook playbooks/demo.yml $(if $(UNTHROTTLED),-e '{"barrier_throttles": {}}')

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

lab-up: setup ## bring the netns lab up (and leave it up)
	ansible-playbook playbooks/lab_up.yml

lab-down: setup ## remove the netns lab
	ansible-playbook playbooks/lab_down.yml

render: setup ## rebuild a report from a run directory: make render RUN=runs/<dir>
	ansible-playbook playbooks/render_report.yml -e run_dir=$(RUN)

history: setup ## the recorded runs with their step time, straggler, idle share: make history [N=20]
	ansible-playbook playbooks/history.yml $(if $(N),-e limit=$(N))

history-rebuild: setup ## index every run directory under runs/ again (runs/history.sqlite)
	ansible-playbook playbooks/history.yml -e rebuild=true $(if $(N),-e limit=$(N))

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

vmlab-up: vmlab-image ## boot the VM lab (and leave it up)
	ansible-playbook -i inventories/vmlab/hosts.yml playbooks/vmlab_up.yml

vmlab-down: setup ## stop the VM lab
	ansible-playbook -i inventories/vmlab/hosts.yml playbooks/vmlab_down.yml

vmlab-test: vmlab-setup setup-test ## the VM tier of the tests alone
	bash tests/vmlab/run.sh

test: setup-test .stamps/apt-vmlab ## run the whole test suite (lint, sanity, units, ansible-core matrix, integration, molecule, VM lab)
	@bash tests/run-all.sh

test-matrix: setup-test ## sanity and units against every supported ansible-core, each in its own venv (V="2.17.14 ...")
	bash tests/matrix/run.sh $(V)

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
