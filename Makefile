# The two commands of the README. Both create ./.venv from nothing but Python and pip.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test install clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# A regular (non-editable) install: the tests then exercise the installed wheel and its
# package data, exactly what a user gets from `pip install idyn`.
install: $(BIN)/activate
	rm -rf build          # setuptools would pack a stale build/lib (e.g. old package layouts)
	$(BIN)/pip uninstall --quiet --yes idyn 2>/dev/null || true
	$(BIN)/pip install --quiet ".[test]"

demo: install
	$(BIN)/idyn demo --out results/demo

test: install
	cd tests && ../$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info results
