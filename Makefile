# Two commands do everything on a fresh machine:
#   make repro   install into .venv, pull the shipped models (dvc-store/), then `dvc repro` the main pipeline
#   make verify  install, pull, recompute every main stage (dvc repro -f), check models and curves are byte-identical
#   make verify PAPER=hfldd  re-run a seeded sample of a paper's committed stages and compare with dvc.lock
#   make test    install into .venv, then run the test suite (includes the whole pipeline at smoke profile)
#   make fedhydra|fedmho|hfldd|ofeded  install, pull what ships for that paper (papers/<paper>/, a DVC project of
#                  its own) and re-render its reports from the committed runs: no training stage runs.
#                  To recompute a paper's runs: cd papers/<paper> && dvc repro (hours)
#   make report    one PDF of every paper's committed reports (report/osfl-report.pdf, pdflatex): nothing trains
#   make deps      write every stage's code deps from the imports; make check-deps checks them (tests do too)
#   make lock      re-freeze requirements.lock from requirements.txt (after changing a pin there)
#   make hooks     install the commit-msg check (.ci/commit-msg: subject of at most 72 characters, then a blank line)
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)

# the pipelines, discovered: every papers/<name>/ with a dvc.yaml (osfl.discover does the same for Python)
PAPERS := $(sort $(patsubst papers/%/dvc.yaml,%,$(wildcard papers/*/dvc.yaml)))

.PHONY: install repro verify $(PAPERS) report deps check-deps lock test test-fast bench dag farm clean-venv hooks

install: $(VENV)/.installed

# requirements.lock pins every package exactly (requirements.txt: the direct ones, exactly too)
$(VENV)/.installed: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check 'uv==0.13.9'
	$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -r requirements.lock
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	touch $@

repro: install
	dvc pull
	dvc repro

# a paper's outputs that the shipped store holds, checked out (`dvc pull --allow-missing` stops part-way on the ones
# that do not ship; fetch then checkout does not): $(call checkout_shipped,<paper>)
checkout_shipped = cd papers/$(1) && { dvc fetch -q || echo "make: papers/$(1): outputs that do not ship were skipped (tests/test_shipped_store.py, NOT_SHIPPED, says which and why)"; } && dvc checkout --allow-missing -q

# FedDF's auxiliary data in the main experiment is Fashion-MNIST: say so in one line before anything runs
FMNIST := /usr/share/datasets/fashion-mnist
# make verify PAPER=<paper> [SAMPLE=3 SEED=0 STAGES=globs]: re-run a seeded sample of that paper's committed stages whose code and
# inputs are as recorded and compare their outputs with dvc.lock (osfl.provenance.verify); it lists the others and why,
# after the committed runs that were not computed from one another (osfl.provenance.lineage; reported, not fatal)
PAPER ?=
SAMPLE ?= 3
SEED ?= 0
STAGES ?=
verify: install
ifneq ($(PAPER),)
	@test -d papers/$(PAPER) || { echo "make verify: PAPER=$(PAPER): allowed: $(PAPERS)"; exit 2; }
	$(call checkout_shipped,$(PAPER))
	-$(BIN)/python -m osfl.provenance.lineage papers/$(PAPER)
	$(BIN)/python -m osfl.provenance.verify papers/$(PAPER) --sample $(SAMPLE) --seed $(SEED) $(if $(STAGES),--stages '$(STAGES)')
else
	@test -d $(FMNIST) || [ -n "$(DOWNLOAD)" ] || { echo "make verify: Fashion-MNIST (FedDF's auxiliary data) is not installed: run 'apt-get install dataset-fashion-mnist', or 'make verify DOWNLOAD=1' to let torchvision download it"; exit 1; }
	dvc pull
	$(BIN)/python -m osfl.provenance.machine results/main/runtime/clients.json
	find models/main results/main/live -type f \( -name '*.pt' -o -name '*.tsv' -o -name metrics.json \) \
	  | sort | xargs md5sum > .verify.md5
	dvc repro -f
	md5sum --check --quiet .verify.md5 && echo "verify: every model, curve and live metric is byte-identical"
endif

# a paper's reports from its committed runs: pull what ships (the runs' live curves among it), rebuild the cached
# inputs its render reads that do not ship (FedHydra's prepared data), then the render stage alone; nothing trains
RENDER_INPUTS_fedhydra := prepare
# the other projects whose runs a paper's render reads (FedHydra's table01_cpu: the benchmark's): their shipped outputs too
RENDER_READS_fedhydra := benchmark
$(PAPERS): install
	@test -d papers/$@/results || { echo "make $@: papers/$@ has no committed runs yet; to compute them: cd papers/$@ && dvc repro (hours)"; exit 1; }
	$(call checkout_shipped,$@)
	$(if $(RENDER_READS_$@),$(call checkout_shipped,$(RENDER_READS_$@)))
	$(if $(RENDER_INPUTS_$@),cd papers/$@ && dvc repro --single-item $(RENDER_INPUTS_$@))
	cd papers/$@ && dvc repro --single-item render

# the compiled report: report/ is a DVC project whose one stage reads the papers' committed reports (git-tracked)
report: install
	@command -v pdflatex >/dev/null || { echo "make report: pdflatex is missing: apt-get install texlive-latex-base texlive-latex-recommended"; exit 1; }
	cd report && dvc repro
	@echo "make report: report/osfl-report.pdf"

deps: install
	$(BIN)/python -m osfl.provenance.deps --write

check-deps: install
	$(BIN)/python -m osfl.provenance.deps

lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install -q --disable-pip-version-check 'uv==0.13.9'
	.lock-venv/bin/uv pip install -q --python .lock-venv/bin/python -r requirements.txt
	{ sed -n 1,2p requirements.lock; .lock-venv/bin/uv pip freeze --python .lock-venv/bin/python; } > requirements.lock.new
	mv requirements.lock.new requirements.lock && rm -rf .lock-venv

test: install
	$(BIN)/python -m pytest

# the fast lane: every test but the end-to-end pipeline runs (marker `slow`, pyproject.toml)
test-fast: install
	$(BIN)/python -m pytest -m "not slow"

# make farm PIPELINE=papers/fedhydra/dvc.yaml STAGES='server@*' [FARM_ARGS='--address auto']: the stale stages on Ray
PIPELINE ?= dvc.yaml
farm: install
	$(BIN)/python -m osfl.farm $(PIPELINE) $(STAGES) $(FARM_ARGS)

bench: install
	$(BIN)/python benchmarks/bench_local_training.py
	$(BIN)/python benchmarks/bench_generator.py
	$(BIN)/python benchmarks/bench_teacher_step.py
	$(BIN)/python benchmarks/bench_fedhydra_run.py
	$(BIN)/python benchmarks/bench_matching.py
	$(BIN)/python benchmarks/bench_farm.py

hooks:
	mkdir -p "$$(git rev-parse --git-path hooks)"
	ln -sf "$(abspath .ci/commit-msg)" "$$(git rev-parse --git-path hooks)/commit-msg"
	@echo "make hooks: .git/hooks/commit-msg checks every commit's subject (at most 72 characters)"

dag: install
	dvc dag --md

clean-venv:
	rm -rf $(VENV)
