# The two commands the README starts with: `make serve` and `make test`.
BUILD ?= build
JOBS  ?= $(shell nproc)
MODEL ?= Qwen/Qwen3-VL-2B-Instruct
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

serve: build
	$(QVL) serve --model $(MODEL)

clean:
	rm -rf $(BUILD)
