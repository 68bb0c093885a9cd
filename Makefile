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

.PHONY: demo test fast lint typecheck unit docs bench clean

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

test: lint typecheck unit

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

docs: $(BIN)/.installed
	$(BIN)/dra-guard rules --format markdown > docs/rules.md
	$(BIN)/python -m dra_guard.present.rule_index > dra_guard/rules/index.json
	$(BIN)/python -m dra_guard.present.config_schema > dra_guard/config.schema.json

clean:
	rm -rf $(VENV) $(BENCH_VENV) node_modules dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
