# The README's two commands are `make demo` and `make test`; each builds .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench bench-server clean setup dist kits

# flock: two `make` runs in one checkout at the same time build the venv once.
$(STAMP): pyproject.toml
	flock .venv.lock sh -c '\
	  test -f $(STAMP) && test $(STAMP) -nt pyproject.toml && exit 0; \
	  test -d $(VENV) || $(PYTHON) -m venv $(VENV); \
	  $(BIN)/pip install --quiet --upgrade pip && \
	  $(BIN)/pip install --quiet -e ".[all]" && \
	  $(BIN)/python -m compileall -q referee >/dev/null && touch $(STAMP)'

demo: $(STAMP)
	$(BIN)/referee tournament demo --publish

lint: $(STAMP)
	$(BIN)/ruff check referee tests bench
	$(BIN)/ruff format --check referee tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# Installs and starts what the tests need (as root on Debian): bubblewrap, Node.js, Docker and
# its bot image. Without root it says what is missing and those tests skip (CI=true: fail).
setup:
	.ci/setup-machine

test: setup lint
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python -m bench

# The competition server under load (bench/server_bench.py): about ten minutes, not part of
# `make bench`, `make test` or CI.
bench-server: $(STAMP)
	$(BIN)/python -m bench.server_bench

# Each sample bot carries its own copy of its kit (a bot sees only its own folder, and its
# hash covers what it runs): this copies protocol/kits/ over them again after a kit change
# (for C and C++ the kit's Makefile too; each bot's own source stays).
# tests/test_kits.py fails, naming this target, while a copy differs.
kits:
	for bot in sample_bots/*/; do \
	  if [ -f "$$bot/botkit.py" ]; then cp protocol/kits/python/botkit.py "$$bot/botkit.py"; fi; \
	  if [ -f "$$bot/botkit.js" ]; then cp protocol/kits/javascript/botkit.js "$$bot/botkit.js"; fi; \
	  if [ -f "$$bot/botkit.h" ]; then cp protocol/kits/c/botkit.[ch] protocol/kits/c/Makefile "$$bot"; fi; \
	  if [ -f "$$bot/botkit.hpp" ]; then cp protocol/kits/cpp/botkit.hpp protocol/kits/cpp/Makefile "$$bot"; fi; \
	  if [ -f "$$bot/botkit.rs" ]; then cp protocol/kits/rust/botkit.rs protocol/kits/rust/Makefile "$$bot"; fi; \
	  if [ -f "$$bot/BotKit.java" ]; then cp protocol/kits/java/BotKit.java protocol/kits/java/Makefile "$$bot"; fi; \
	done

# The wheel and the sdist (README: Install); `pipx install dist/*.whl` anywhere.
dist: $(STAMP)
	rm -rf dist build *.egg-info && $(BIN)/python -m build --outdir dist

clean:
	rm -rf $(VENV) .venv.lock build dist site *.egg-info .pytest_cache .mypy_cache .ruff_cache
