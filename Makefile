# naviscan — every target installs what it needs on a fresh Debian machine (apt-get, as root or via sudo).
PREFIX ?= /usr/local
SWIFT ?= swift
DEB_PACKAGES := pkg-config libsndfile1-dev libmpg123-dev libfftw3-dev libebur128-dev libavformat-dev libavcodec-dev libavutil-dev
PKGCONFIG_MODULES := sndfile libmpg123 libsyn123 fftw3f libebur128 libavformat libavcodec libavutil
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_OUT ?= demo-out

.PHONY: all deps build test demo bench bench-check bench-thresholds speed-bar fuzz fuzz-check install clean

all: build

# Installs the C libraries' -dev packages when any is missing (after apt-get update).
deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists $(PKGCONFIG_MODULES); then \
		echo "==> installing $(DEB_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(DEB_PACKAGES); \
	fi

build: deps
	$(SWIFT) build -c release --product naviscan

# The end-to-end scan tests run the naviscan executable, so it is built first. The suites run one at a
# time: several start live servers and scans, and on a 2-core machine they starve each other.
test: deps
	$(SWIFT) build --product naviscan
	$(SWIFT) test --no-parallel

# Scans the bundled demo library (Fixtures/demo), prints one track's DJ profile, draws its frames as text.
demo: build
	@mkdir -p $(DEMO_OUT)
	.build/release/naviscan scan Fixtures/demo --out $(DEMO_OUT)/store
	.build/release/naviscan analyze Fixtures/demo/groove_120bpm.mp3 --vis $(DEMO_OUT)/groove.vis --dj
	.build/release/naviscan inspect $(DEMO_OUT)/groove.vis --rows 20

# The whole suite: wall clock, x-realtime, mallocs and peak memory per stage and per track.
bench: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

# CI's smoke of the suite: runs every benchmark and fails when a malloc count moves more than 100
# from Benchmarks/Thresholds (an allocation per block or per frame). Time is never checked.
bench-check: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark thresholds check --metric mallocCountTotal --no-progress

# Rewrites Benchmarks/Thresholds from a run (after a deliberate change in allocations).
bench-thresholds: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark thresholds update --metric mallocCountTotal --no-progress

# The speed bar on ../shared/corpus's music (see scripts/speed-bar.sh).
speed-bar: build
	scripts/speed-bar.sh

# Fuzzes every reader of untrusted files for FUZZ_SECONDS (default 300): libFuzzer when
# `swiftc -sanitize=fuzzer` links, else the mutation driver (see scripts/fuzz/README.md).
FUZZ_SECONDS ?= 300
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) SWIFT=$(SWIFT) scripts/fuzz/run.sh

# CI's short fixed-seed pass: the same inputs on every run, so a failure reproduces.
FUZZ_CHECK_ITERATIONS ?= 3000
fuzz-check: deps
	$(SWIFT) build --product naviscan-fuzz
	scripts/fuzz/make-corpus.sh .build/fuzz-corpus
	.build/debug/naviscan-fuzz .build/fuzz-corpus --seed 1 --iterations $(FUZZ_CHECK_ITERATIONS) --artifacts .build/fuzz-artifacts

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 .build/release/naviscan $(DESTDIR)$(PREFIX)/bin/naviscan

clean:
	rm -rf .build .build-fuzz Benchmarks/.build $(DEMO_OUT)
