# The two commands the README starts with: `make serve` and `make test`.
BUILD ?= build
JOBS  ?= $(shell nproc)
MODEL ?= Qwen/Qwen3-VL-2B-Instruct
# Extra `qvl serve` options, e.g. make serve SERVE_ARGS="--host 0.0.0.0 --port 9000"
SERVE_ARGS ?=
QVL    = $(BUILD)/qvl
# The programs in bench/ (bench/CMakeLists.txt: <name>_bench.cpp -> bench_<name>,
# any other .cpp -> <name>), and qvl itself for `qvl bench`.
BENCH_TARGETS = qvl $(patsubst %_bench,bench_%,$(basename $(notdir $(wildcard bench/*.cpp))))

.PHONY: all deps configure build test sanitize test-debian13 test-arm64 serve bench clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

# Everything: the library, qvl, the tests, the fuzz replays and the benchmarks.
build: configure
	@cmake --build $(BUILD) -j$(JOBS)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

# The whole suite under ASan+UBSan (QVL_SANITIZE: no recover, the first report
# fails the test) in its own build folder. Not part of `make test`: it takes
# longer than CI's budget (README "Testing" has the figure). Excluded, and why:
#   python.qvl  loads the instrumented libqvl.so into an uninstrumented python
#               through ctypes; the ASan runtime must be the first library loaded.
SAN_BUILD   ?= build-asan
SAN_EXCLUDE ?= ^python[.]qvl$$
SAN_ENV = ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:strict_string_checks=1 \
          LSAN_OPTIONS=suppressions=$(CURDIR)/fuzz/lsan.supp \
          UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
sanitize: deps
	@cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQVL_SANITIZE=ON -DQVL_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(SAN_BUILD) -j$(JOBS)
	@$(SAN_ENV) ctest --test-dir $(SAN_BUILD) --output-on-failure -j$(JOBS) -E '$(SAN_EXCLUDE)'

# `make test` on Debian 13 (trixie: GCC 14, Highway 1.2, FFmpeg 7.1) from a Debian machine of
# any release, as root: a trixie root made once with debootstrap outside the repo (in
# $(DISTRO_ROOTS)/trixie), the repo mounted into it at the same path, then install-deps and
# `make test` there in build-debian13. docs/platforms.md says what it checks.
DISTRO_ROOTS ?= /var/tmp/qvl-roots
test-debian13:
	@QVL_ROOTS=$(DISTRO_ROOTS) scripts/distro-root.sh run trixie -- make test BUILD=build-debian13 JOBS=$(JOBS)

# ARM64: cross-builds in a Debian 12 root of its own (made on first use, outside
# the repository; the host gets no arm64 packages) and runs the kernel, model
# and engine tests under qemu-aarch64 on two CPU models, cortex-a76 (NEON with
# the dot product) and max (SVE, I8MM, BF16). Needs root (debootstrap, chroot):
# sudo make test-arm64. docs/platforms.md says what it covers and how long it takes.
test-arm64:
	@JOBS=$(JOBS) scripts/test-arm64.sh

# Builds the qvl binary only (no tests, benchmarks or browser tooling), then
# binds 127.0.0.1:8080; a repo id is downloaded into the Hugging Face cache
# first (/health answers 503 until the model is loaded).
serve: configure
	@cmake --build $(BUILD) --target qvl -j$(JOBS)
	$(QVL) serve --model $(MODEL) $(SERVE_ARGS)

# Builds the benchmark programs and prints the quick kernel report (JSON: the
# machine's limits and each ops kernel as a fraction of them, in one run);
# the README's "Speed" section lists the full runs.
bench: configure
	@cmake --build $(BUILD) --target $(BENCH_TARGETS) -j$(JOBS)
	$(BUILD)/bench/ops_report --quick
	@echo "bench: built $(filter-out qvl,$(BENCH_TARGETS)) in $(BUILD)/bench; full runs:" >&2
	@echo "  $(BUILD)/bench/ops_report                  # kernels vs this machine's limits" >&2
	@echo "  $(BUILD)/bench/image_preprocess --iters 5  # decode + preprocess vs PIL" >&2
	@echo "  $(BUILD)/bench/grammar_report              # constrained decoding: mask costs" >&2
	@echo "  $(QVL) bench --model M --weights q8  # end-to-end speed, one JSON object" >&2

clean:
	rm -rf $(BUILD)
