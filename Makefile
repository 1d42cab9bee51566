# shoal: the two commands a new user runs are `make run` and `make test`.
SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=

.PHONY: help deps build test run test-asan test-tsan fuzz-parquet bench-parquet bench-delta bench-loader bench-train bench-dist bench-track format lint clean

help:
	@echo "make run        install dependencies, build, and run the main job"
	@echo "make test       install dependencies, build, and run every test (ctest)"
	@echo "make build      configure and build Release with Ninja into $(BUILD)/ (CLI: $(BUILD)/shoal)"
	@echo "make test-asan  ASan/UBSan build of the non-torch libraries and their tests ($(ASAN_BUILD)/)"
	@echo "make test-tsan  ThreadSanitizer build of the loader and its tests ($(TSAN_BUILD)/)"
	@echo "make fuzz-parquet  run the Parquet fuzzer for FUZZ_SECONDS=$(FUZZ_SECONDS)"
	@echo "make bench-parquet  Parquet scan against DuckDB, side by side (figures in docs/benchmarks.md)"
	@echo "make bench-delta    Delta snapshot load times: long logs, checkpoints, many files"
	@echo "make bench-loader   the loader against torch DataLoader + PIL, side by side (docs/benchmarks.md)"
	@echo "make bench-train    shoal train against Python PyTorch, and the Trainer's overhead over a raw loop"
	@echo "make bench-dist     data-parallel scaling, gradient-sync bandwidth, overlap; charts in docs/img"
	@echo "make bench-track    tracking server under wrk: log-batch ingest, log-metric p99, runs/search over 10k runs"
	@echo "make format | lint  clang-format in place | clang-tidy"

deps:
	scripts/install-deps

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

run: deps
	$(MAKE) build
	scripts/main-job $(BUILD)/shoal

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSHOAL_SANITIZE=ON -DSHOAL_WITH_TORCH=OFF $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHOAL_SANITIZE_THREAD=ON -DSHOAL_WITH_TORCH=OFF $(CMAKE_FLAGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target data_tests
	cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./src/data/data_tests --gtest_filter='Loader*:Transform*'

fuzz-parquet:
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHOAL_WITH_TORCH=OFF -DSHOAL_BUILD_TESTS=OFF -DSHOAL_BUILD_FUZZERS=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target parquet_fuzzer
	mkdir -p $(FUZZ_BUILD)/corpus && cp -n ../shared/testdata/parquet-testing/data/*.parquet $(FUZZ_BUILD)/corpus/ 2>/dev/null || true
	$(FUZZ_BUILD)/src/parquet/parquet_fuzzer -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 $(FUZZ_BUILD)/corpus

bench-parquet: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_BENCHMARKS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target shoal_parquet_scan shoal_make_png_table
	node bench/parquet_scan_compare.mjs $(BUILD) --memory

bench-loader: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_BENCHMARKS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target shoal shoal_decode_bound shoal_transform_bench
	/usr/bin/python3 bench/loader_compare.py $(BUILD)
	$(BUILD)/bench/shoal_transform_bench $(BUILD)/bench-data/fmnist-test-jpeg224
	$(BUILD)/bench/shoal_transform_bench $(BUILD)/bench-data/fmnist-test-jpeg224 --unaligned

bench-train: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_BENCHMARKS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target shoal shoal-torch shoal_train_overhead
	/usr/bin/python3 bench/train_compare.py $(BUILD)
	$(BUILD)/bench/shoal_train_overhead $(BUILD)/bench-data/fmnist-train-png --epochs 3

bench-dist: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_BENCHMARKS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target shoal shoal-torch shoal_dist_bench
	/usr/bin/python3 bench/dist_compare.py $(BUILD)

bench-track: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_BENCHMARKS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target shoal shoal_track_seed
	/usr/bin/python3 bench/track_bench.py $(BUILD)

bench-delta: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_BENCHMARKS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target shoal_delta_snapshot
	mkdir -p $(BUILD)/bench-data && $(BUILD)/bench/shoal_delta_snapshot $(BUILD)/bench-data

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

lint: $(BUILD)/build.ninja
	git ls-files 'src/*.cc' | xargs clang-tidy -p $(BUILD) --quiet

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
