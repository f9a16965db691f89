# The two commands the README starts with: `make serve` and `make test`.
BUILD ?= build
JOBS  ?= $(shell nproc)
MODEL ?= Qwen/Qwen3-VL-2B-Instruct
# Extra `qvl serve` options, e.g. make serve SERVE_ARGS="--host 0.0.0.0 --port 9000"
SERVE_ARGS ?=
QVL    = $(BUILD)/qvl

.PHONY: all deps build test serve bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

# Binds 127.0.0.1:8080; a repo id is downloaded into the Hugging Face cache first
# (/health answers 503 until the model is loaded).
serve: build
	$(QVL) serve --model $(MODEL) $(SERVE_ARGS)

clean:
	rm -rf $(BUILD)
