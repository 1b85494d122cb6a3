# Two commands do everything on a fresh machine:
#   make repro   install into .venv, pull the shipped models (dvc-store/), then `dvc repro` the main pipeline
#   make verify  install, pull, recompute every main stage (dvc repro -f), check models and curves are byte-identical
#   make test    install into .venv, then run the test suite (includes the whole pipeline at smoke profile)
#   make fedhydra  install, then reproduce FedHydra's tables and figures (papers/fedhydra/, a DVC project of its own)
#   make fedmho    install, then reproduce FedMHO's pipeline (papers/fedmho/: Tables I-IV, Figs. 5 and 9 so far)
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: install repro verify fedhydra fedmho test bench dag farm clean-venv

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check 'uv>=0.5'
	$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -r requirements.txt
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	touch $@

repro: install
	dvc pull
	dvc repro

verify: install
	dvc pull
	find models/main results/main/live -type f \( -name '*.pt' -o -name '*.tsv' -o -name metrics.json \) \
	  | sort | xargs md5sum > .verify.md5
	dvc repro -f
	md5sum --check --quiet .verify.md5 && echo "verify: every model, curve and live metric is byte-identical"

fedhydra: install
	cd papers/fedhydra && dvc repro

fedmho: install
	cd papers/fedmho && dvc repro

test: install
	$(BIN)/python -m pytest

# make farm PIPELINE=papers/fedhydra/dvc.yaml STAGES='server@*' [FARM_ARGS='--address auto']: the stale stages on Ray
PIPELINE ?= dvc.yaml
farm: install
	$(BIN)/python -m osfl.farm $(PIPELINE) $(STAGES) $(FARM_ARGS)

bench: install
	$(BIN)/python benchmarks/bench_local_training.py
	$(BIN)/python benchmarks/bench_generator.py
	$(BIN)/python benchmarks/bench_fedhydra_run.py
	$(BIN)/python benchmarks/bench_matching.py
	$(BIN)/python benchmarks/bench_farm.py

dag: install
	dvc dag --md

clean-venv:
	rm -rf $(VENV)
