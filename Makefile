# The two commands of the README: `make demo` and `make test`.  Both build their own
# virtualenv (.venv) and node_modules from the package registries, then work offline.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The extras the tests use: all but scrub (tests/test_scrub.py runs without cuda-python).
EXTRAS := cdk8s,fast,pulumi,webhook

# cdk8s must never phone home (upgrade check) or nag about Node 20 (end-of-life banner).
export CDK8S_CHECK_UPGRADE := false
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: demo test fast lint typecheck unit floors docs bench fuzz clean

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade 'pip>=25.1'
	@# The project with its extras, and the PEP 735 `dev` group of pyproject.toml (pip >= 25.1).
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]' --group dev
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

demo: $(BIN)/.installed node_modules/.installed
	npx --no-install cdk8s synth
	@echo
	@echo "cdk8s wrote these objects:"
	@for f in $$(find dist -type f -name '*.yaml' | sort); do \
	  echo "  $$f"; \
	  $(BIN)/python -c 'import sys, yaml; [print("    %s %s/%s" % (d["kind"], d["metadata"].get("namespace", "-"), d["metadata"]["name"])) for d in yaml.safe_load_all(open(sys.argv[1])) if d]' "$$f"; \
	done
	@echo
	@echo "== dra-guard check dist/   (what we built: compliant)"
	$(BIN)/dra-guard check dist/
	@echo
	@echo "== dra-guard check examples/manifests/   (a legacy MIG request: a finding, exit 1)"
	$(BIN)/dra-guard check examples/manifests/; test $$? -eq 1
	@echo
	@echo "== dra-guard migrate --dry-run examples/manifests/   (the same workload, rewritten to DRA)"
	$(BIN)/dra-guard migrate --dry-run examples/manifests/
	@echo
	@echo "== dra-guard admission-policy   (the rules as ValidatingAdmissionPolicies for the cluster)"
	@$(BIN)/dra-guard admission-policy | $(BIN)/python -c 'import sys, yaml; policies = [d["metadata"]["name"] for d in yaml.safe_load_all(sys.stdin) if d["kind"] == "ValidatingAdmissionPolicy"]; print("\n".join("  " + name for name in policies)); print("  (%d policies, each with its binding)" % len(policies))'

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(BIN)/.installed
	$(BIN)/mypy

# The whole suite with the fast reader from the first document (forced: a missing wheel
# fails here, loudly), then the reading tests with the PyYAML reader alone, the fallback.
unit: $(BIN)/.installed node_modules/.installed
	DRA_GUARD_YAML_PARSER=rapidyaml $(BIN)/pytest
	DRA_GUARD_YAML_PARSER=pyyaml $(BIN)/pytest -q tests/test_kubectl_differential.py tests/test_kubectl_reading.py \
	  tests/test_never_crash.py tests/test_robustness.py tests/test_corpus.py tests/test_golden_corpus.py

# The dependency floors: pyproject.toml's lower bounds are the oldest versions tested.  A
# virtualenv of their own gets the same extras at exactly constraints/floors.txt (generated
# from pyproject.toml by tools/floors.py; tests/test_dependencies.py fails when it is stale,
# and here when pip installed anything else), with the `test` group, rebuilt whenever either
# file changes.  Then the tests that exercise the floored packages, not the whole suite again:
# the suite at today's versions is `unit`; this adds about 3½ minutes on a 2-core machine
# (1½ to build the virtualenv with pip's cache warm, 2 to run 1,025 tests), not eight.
FLOORS_VENV := .floors-venv
FLOORS_TESTS := \
  tests/test_dependencies.py \
  tests/test_cdk8s_registry.py tests/test_cdk8s_enforce_batch.py tests/test_validation.py tests/test_spec.py \
  tests/test_admission_guard.py \
  tests/test_pulumi_component.py tests/test_pulumi_policies.py tests/test_pulumi_pack_grpc.py \
  tests/test_analyze_once.py tests/test_rule_examples.py \
  tests/test_selectors.py tests/test_conjuncts.py tests/test_selector_fast_path.py tests/test_allocation.py \
  tests/test_admission_policy.py \
  tests/test_webhook.py tests/test_webhook_lookups.py \
  tests/test_migrate.py tests/test_kubectl_reading.py tests/test_fast_reader.py tests/test_completion.py \
  tests/test_repository_walk.py::test_gitignore_is_honoured_and_no_ignore_turns_it_off \
  tests/test_repository_walk.py::test_excludes_from_the_command_line_and_the_configuration
# Which floors each line exercises: cdk8s, constructs and jsii (the constructs, their synth
# and enforce(), AdmissionGuard); pulumi, pulumi-kubernetes and pulumi-policy (the component
# under mocks, the pack over gRPC as `pulumi preview` starts it, every rule's examples
# through both front ends); cel-python and google-re2 (selectors, allocation, the admission
# policies' CEL emulated); uvicorn, kubernetes and cryptography (the webhook served over TLS,
# its lookups through the Kubernetes client); ruamel.yaml (migrate), PyYAML and rapidyaml
# (the readers; rapidyaml's floor was chosen with tests/test_yaml_fuzz.py and
# tests/test_kubectl_differential.py too, two minutes more), shtab (completion), pathspec
# (.gitignore and exclude).  Not tested at its
# floor: cuda-python (scrub: needs an NVIDIA GPU), and tomli and typing_extensions (only
# installed on Python 3.10; this runs the Python that `make` finds).
$(FLOORS_VENV)/.installed: pyproject.toml constraints/floors.txt
	rm -rf $(FLOORS_VENV)
	$(PYTHON) -m venv $(FLOORS_VENV)
	$(FLOORS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade 'pip>=25.1'
	$(FLOORS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c constraints/floors.txt \
	  -e '.[$(EXTRAS)]' --group test
	touch $@

floors: $(FLOORS_VENV)/.installed
	DRA_GUARD_FLOORS_EXTRAS=$(EXTRAS) DRA_GUARD_YAML_PARSER=rapidyaml $(FLOORS_VENV)/bin/pytest -q -p no:cacheprovider $(FLOORS_TESTS)

test: lint typecheck unit floors

# The inner loop: every test that starts no process (tests/conftest.py marks the rest e2e).
fast: $(BIN)/.installed
	$(BIN)/pytest -q -m "not e2e"

# Checkov, for the comparison only, in a virtualenv of its own (never in .venv).
BENCH_VENV := .bench-venv
$(BENCH_VENV)/.installed:
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check checkov
	touch $@

bench: $(BIN)/.installed node_modules/.installed $(BENCH_VENV)/.installed
	@# Every benchmark runs; the target fails at the end if any of them missed a target.
	status=0; \
	$(BIN)/python -m bench.run --checkov $(BENCH_VENV)/bin/checkov || status=1; \
	$(BIN)/python -m bench.cdk8s_synth || status=1; \
	$(BIN)/python -m bench.pulumi_analyze || status=1; \
	$(BIN)/python -m bench.webhook_load || status=1; \
	exit $$status

# The two YAML readers on mutants of real manifests, for as long as asked (a nightly job):
# `make test` reads a fixed sample; this reads about 2,000 a second and fails on any
# document the readers read differently, each written to build/divergences.jsonl.
FUZZ_SECONDS ?= 600
FUZZ_SEED ?= 0
fuzz: $(BIN)/.installed
	mkdir -p build
	DRA_GUARD_YAML_PARSER=rapidyaml $(BIN)/python tools/fuzz_readers.py --seconds $(FUZZ_SECONDS) --seed $(FUZZ_SEED) --out build/divergences.jsonl

docs: $(BIN)/.installed
	$(BIN)/dra-guard rules --format markdown > docs/rules.md
	$(BIN)/python -m dra_guard.present.rule_index > dra_guard/rules/index.json
	$(BIN)/python -m dra_guard.present.config_schema > dra_guard/config.schema.json

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(FLOORS_VENV) node_modules dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
