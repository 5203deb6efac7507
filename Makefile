# The two commands of the README: `make demo` and `make test`. Both install what they need first
# (scripts/setup.sh, a no-op when everything is present).
SHELL := /bin/bash
PY ?= /usr/bin/python3
FUZZ_RUNS ?= 200000
BIN := build/bin/numprobe
FX := ../shared/fixtures/msprobe

.PHONY: all setup setup-msprobe-legacy build build-torch2 build-mindspore demo test check test-unit test-python test-torch2 test-mindspore test-asan test-fuzz test-browser check-format check-includes format bench bench-diagnosis bench-mindspore demo-mindspore install clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake --preset release > build.configure.log || { cat build.configure.log; exit 1; }
	@cmake --build --preset release

demo: build
	@echo "== numprobe info: real ResNet-50 msprobe dump (2 steps) =="
	$(BIN) info $(FX)/quick_start_resnet50_gpu_mix_statistics
	@echo
	@echo "== numprobe stats: tensors of an msprobe tensor dump =="
	$(BIN) stats $(FX)/synthetic_edge_cases/tensor/npu/dump_tensor_data/Functional.{identical,nan_diff_pos,npu_overflow,int_tensor}.0.forward.output.0.npy
	@echo
	@echo "== crash safety: a dump whose writer died mid-step, recovered =="
	@bash scripts/demo_recover.sh $(BIN)
	@echo
	@echo "== compare: ResNet-50 step 0 vs step 1 (weights changed by the optimizer step) =="
	$(BIN) compare -t $(FX)/quick_start_resnet50_gpu_mix_statistics/step0 -g $(FX)/quick_start_resnet50_gpu_mix_statistics/step1 -o demo_out/resnet -s
	@echo
	@echo "== compare: tensor dumps with one API made wrong (big_error) =="
	$(BIN) compare -t $(FX)/synthetic_edge_cases/tensor/npu -g $(FX)/synthetic_edge_cases/tensor/bench -o demo_out/synthetic
	@echo
	@echo "== capture: two training runs of a small GPT (run B's layer_norm uses the wrong eps) =="
	@rm -rf demo_out/capture
	PYTHONPATH=python $(PY) examples/python/capture_demo.py demo_out/capture
	@echo
	@echo "== capture from C++: a libtorch MLP dumped through numprobe::PrecisionDebugger =="
	build/bin/train_mlp demo_out/capture_cpp mix
	@echo
	@echo "== compare: which op of run B first went wrong? =="
	$(BIN) compare -t demo_out/capture/run_b -g demo_out/capture/run_a -o demo_out/capture/compare
	@echo
	@echo "== ckpt-compare: the two runs' final weights (torch.save state dicts) =="
	$(BIN) ckpt-compare demo_out/capture/run_b_weights.pt demo_out/capture/run_a_weights.pt -o demo_out/capture/ckpt_compare.json --csv
	@echo
	@echo "== config-check: were the two runs set up alike? (environment, packages, hyper-parameters, data: yes; weights part after step 0) =="
	$(BIN) config-check -c demo_out/capture/run_a_config.zip demo_out/capture/run_b_config.zip -o demo_out/capture/config_check || echo "(exit 1: a check failed, as expected)"
	@echo
	@echo "== locate: two real training scripts driven round by round to the op where they part (target: block 1's layer norm eps) =="
	PYTHONPATH=python $(BIN) locate --golden "$(PY) examples/python/locate_demo_golden.py" --target "$(PY) examples/python/locate_demo_target.py" -o demo_out/locate
	@echo "Report: demo_out/locate/locate_report.md"
	@echo
	@echo "== monitor: a training run watched by numprobe.TrainerMon (step 12's batch is unnormalised) =="
	@rm -rf demo_out/monitor
	MONITOR_OUTPUT_DIR=demo_out/monitor PYTHONPATH=python $(PY) examples/python/monitor_demo.py examples/monitor/monitor_config.json
	$(BIN) monitor-analyse demo_out/monitor -k 5
	$(BIN) monitor-report demo_out/monitor -o demo_out/monitor/report.html
	@echo "Report: demo_out/monitor/report.html (one file: open it in any browser)"
	@echo
	@echo "== graph: the same compare as two model hierarchies, for the browser =="
	@rm -rf demo_out/graph
	$(BIN) graph -t demo_out/capture/run_b -g demo_out/capture/run_a -o demo_out/graph/faulty_run.vis.db
	@echo
	@echo "Open it in the browser: $(BIN) serve demo_out/graph/faulty_run.vis.db   (then http://127.0.0.1:8080/)"
	@echo

test: build
	@$(MAKE) --no-print-directory test-unit test-python test-torch2 test-mindspore test-asan test-fuzz test-browser check-format check-includes
	@echo "make test: all suites passed"

# The inner loop (docs/testing.md): build, unit tests, the torch 1.13 pytest lane. No torch 2.x or
# MindSpore lane, sanitizers, fuzzers or browser: `make test` runs those.
check: build
	@$(MAKE) --no-print-directory test-unit test-python
	@echo "make check: unit tests and the torch 1.13 lane passed"

test-unit:
	ctest --test-dir build --output-on-failure -j2

# The graph viewer in Debian's chromium (playwright-core from web/node_modules, installed by the
# build's npm ci): tests/browser/graph_ui.test.mjs, including a 1M-node scale run that prints its times.
test-browser: build
	@cd web && { [ -f node_modules/.numprobe-stamp ] || npm ci --no-audit --no-fund --prefer-offline --loglevel=error; }
	node --test tests/browser/

# msprobe 8.3.3, the newest release with torch free_benchmark and grad_probe, for both lanes' live
# tests of those tasks (tests/python/msprobe_legacy.py); where pip cannot install it they skip.
setup-msprobe-legacy:
	@bash scripts/setup_venv.sh msprobe_legacy > /dev/null || \
	  echo "msprobe_legacy: SKIPPED: scripts/setup_venv.sh msprobe_legacy failed (above); the live free_benchmark/grad_probe tests skip"

test-python: setup-msprobe-legacy
	@$(PY) -m pytest -q tests/python; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; exit 1; fi; exit $$rc

# The torch 2.x lane: pip's torch and the live second readers (msprobe with its graph plugin,
# TensorBoard, transformers, Playwright) in .venv/torch2 (tests/requirements/torch2.txt), the separate
# tb-graph-ascend plugin in .venv/viewer, numprobe built against that torch in build-torch2/ with its own
# package tree, and the same pytest suite run there. NUMPROBE_REQUIRE_LIVE turns a missing live reader
# into a failure instead of a skip.
TORCH2_ENV = NUMPROBE_BUILD_DIR=$(CURDIR)/build-torch2 NUMPROBE_PYTHONPATH=$(CURDIR)/build-torch2/python \
             NUMPROBE_VIEWER_VENV=$(CURDIR)/.venv/viewer NUMPROBE_REQUIRE_LIVE=1
build-torch2: setup
	@bash scripts/setup_venv.sh torch2 > /dev/null
	@bash scripts/setup_venv.sh viewer > /dev/null
	@cmake --preset torch2 > build-torch2.configure.log || { cat build-torch2.configure.log; exit 1; }
	@cmake --build --preset torch2

test-torch2: build-torch2 setup-msprobe-legacy
	@$(TORCH2_ENV) .venv/torch2/bin/python -m pytest -q tests/python; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest (torch 2.x): no tests collected"; exit 1; fi; exit $$rc

# The MindSpore lane: PyPI's MindSpore in .venv/mindspore (tests/requirements/mindspore.txt, no torch),
# numprobe._engine built for that venv's Python in build-mindspore/ with its own package tree, and
# tests/python/mindspore run there (the CLI they call is build/'s; msprobe is a live reader there too). MindSpore has wheels for Python
# 3.11 and 3.12 only: where neither exists (Debian 13) the lane is skipped, and says why.
build-mindspore: setup
	@bash scripts/setup_venv.sh mindspore > /dev/null
	@cmake --preset mindspore > build-mindspore.configure.log || { cat build-mindspore.configure.log; exit 1; }
	@cmake --build --preset mindspore

test-mindspore: build
	@rc=0; bash scripts/setup_venv.sh mindspore > /dev/null || rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "test-mindspore: SKIPPED: no Python 3.11 or 3.12 on this machine (MindSpore 2.10 has no wheel for others)"; exit 0; fi; \
	  [ $$rc -eq 0 ] || exit $$rc; \
	  $(MAKE) --no-print-directory build-mindspore && \
	  NUMPROBE_REQUIRE_LIVE=1 PYTHONPATH=$(CURDIR)/build-mindspore/python .venv/mindspore/bin/python -m pytest -q tests/python/mindspore; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest (MindSpore): no tests collected"; exit 1; fi; exit $$rc

# Torch-free tests under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: setup
	@cmake --preset debug > build-debug.configure.log || { cat build-debug.configure.log; exit 1; }
	@cmake --build --preset debug
	ctest --test-dir build-debug --output-on-failure -j2

test-fuzz: setup
	@cmake --preset fuzz > build-fuzz.configure.log || { cat build-fuzz.configure.log; exit 1; }
	@cmake --build --preset fuzz
	bash scripts/run_fuzzers.sh build-fuzz $(FUZZ_RUNS)

check-format:
	@files=$$(git ls-files '*.cc' '*.h' '*.cu'); \
	  clang-format --dry-run --Werror $$files && echo "clang-format: clean"

# Public headers include only public headers; each src/ folder includes only the floors below it
# (scripts/check_includes.py, docs/architecture.md). Also a ctest.
check-includes:
	@$(PY) scripts/check_includes.py

format:
	clang-format -i $$(git ls-files '*.cc' '*.h' '*.cu')

bench: build
	build/bin/bench_hash
	$(PY) bench/stats_vs_cat.py
	build/bin/bench_stats
	build/bin/bench_json
	build/bin/bench_compare
	build/bin/bench_graph
	$(PY) bench/graph_vs_msprobe.py
	$(PY) bench/bench_shard.py
	$(PY) bench/capture_bench.py
	PYTHONPATH=python $(PY) bench/acc_check_bench.py
	@$(MAKE) --no-print-directory bench-diagnosis
	PYTHONPATH=python $(PY) bench/bench_locate.py

# MindSpore against PyTorch: the GPT-style twin captured on both sides, compared, a fault named.
demo-mindspore: build build-mindspore
	@bash scripts/demo_mindspore.sh $(BIN) demo_out/mindspore /usr/bin/python3 .venv/mindspore/bin/python

# MindSpore capture overhead (PyNative, CPU): L0, L1 and mix against the uncaptured step.
bench-mindspore: build-mindspore
	PYTHONPATH=$(CURDIR)/build-mindspore/python .venv/mindspore/bin/python bench/ms_capture_bench.py
	PYTHONPATH=$(CURDIR)/build-mindspore/python .venv/mindspore/bin/python bench/ms_graph_l2_bench.py
	PYTHONPATH=$(CURDIR)/build-mindspore/python .venv/mindspore/bin/python bench/ms_monitor_bench.py

# Does compare name the op where two training runs part? Faults and noise-only pairs on three real
# models (bench/diagnosis/README.md); captures are cached in build/bench_diagnosis.
bench-diagnosis: build
	PYTHONPATH=python $(PY) bench/diagnosis/bench_diagnosis.py

install: build
	cmake --install build

clean:
	rm -rf build build-debug build-fuzz build-torch2 build-mindspore demo_out *.configure.log
