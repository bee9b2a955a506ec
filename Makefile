# Performance targets. `make bench` builds release into .build-perf and runs the kernel benchmark,
# then the end-to-end comparison with the ffmpeg CLI. QUICK=1 for a short run.
SCRATCH ?= .build-perf
BENCH_FLAGS ?= $(if $(QUICK),--quick,)
RUNS ?= $(if $(QUICK),1,3)

.PHONY: bench bench-kernels bench-e2e build-release

build-release:
	bash -c 'source scripts/cpu-flags.sh && swift build -c release "$${SWIFT_CPU_FLAGS[@]}" --scratch-path $(SCRATCH)'

bench-kernels: build-release
	$(SCRATCH)/release/livefilter-bench $(BENCH_FLAGS)

bench-e2e: build-release
	RUNS=$(RUNS) LIVEFILTER=$(SCRATCH)/release/livefilter scripts/bench-e2e.sh

bench: bench-kernels bench-e2e
