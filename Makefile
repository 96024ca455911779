# naviscan — every target installs what it needs on a fresh Debian machine (apt-get, as root or via sudo).
SHELL := /bin/bash
PREFIX ?= /usr/local
# sudo drops the user's PATH (secure_path), so `sudo make install` looks where toolchains are unpacked.
SWIFT ?= $(or $(shell command -v swift 2>/dev/null),$(firstword $(wildcard /opt/swift/usr/bin/swift /usr/share/swift/usr/bin/swift \
	$(if $(SUDO_USER),$(shell getent passwd $(SUDO_USER) | cut -d: -f6)/.local/share/swiftly/bin/swift))),swift)
DEB_PACKAGES := pkg-config libsndfile1-dev libmpg123-dev libfftw3-dev libebur128-dev libavformat-dev libavcodec-dev libavutil-dev libtag1-dev python3-yaml python3-mutagen ffmpeg
PKGCONFIG_MODULES := sndfile libmpg123 libsyn123 fftw3f libebur128 libavformat libavcodec libavutil taglib
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_OUT ?= demo-out
# The installed binary carries the Swift runtime (static stdlib): a machine needs only the Debian
# runtime packages of the C libraries (RUNTIME_PACKAGES), not the Swift toolchain.
RELEASE_FLAGS = -c release --static-swift-stdlib --scratch-path $(BUILD_DIR)
# Every target that runs naviscan (test, build, demo, install, check-install, deb, image, man, tempo-cv,
# test-browser, test-slurm) shares BUILD_DIR: the static release build, made once and never undoing the
# debug build in .build that `swift test` uses. The tests, the fuzz target and the man page's tool are
# compiled in TEST_BUILD_DIR, the same release build without the static standard library (Swift
# Testing has no static library), and run against that one naviscan binary.
BUILD_DIR ?= .build-release
TEST_BUILD_DIR ?= .build-release-tests
TEST_FLAGS = -c release --scratch-path $(TEST_BUILD_DIR)
NAVISCAN = $(BUILD_DIR)/release/naviscan
# Suites that start the executable, a live server or a scan of their own: make test runs them one at a
# time, after the others have run in parallel. A test ID is Module.Suite/test(); add a new suite of that
# kind here.
END_TO_END := NaviscanServerTests\.|\.(CommandLineTests|CommandLineWordingTests|ShardMergeTests|StageVersionTests|HostileInputTests|LibraryBenchmarkTests|ScanCommandTests|SimilarTracksTests|HarmonicMixTests|StoreSafetyTests|TagSafetyTests|TagWriteBackTests|TagKeyTests|LibraryStoreOpenTests|LibraryScannerTests)/
# dpkg-deb's compression of the .deb (CI takes zstd: 23 s less on 2 cores, 10 MB more).
DEB_COMPRESSION ?= xz
# Where make deb and make image put the .deb and the image archives (git-ignored).
DIST_OUT ?= dist-out
RUNTIME_PACKAGES := libsndfile1 libmpg123-0 libsyn123-0 libfftw3-single3 libsqlite3-0 libavformat59 libavcodec59 libavutil57 libtag1v5
BINDIR = $(DESTDIR)$(PREFIX)/bin
MANDIR = $(DESTDIR)$(PREFIX)/share/man/man1
BASH_COMPLETIONS = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSH_COMPLETIONS = $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISH_COMPLETIONS = $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
SYSTEMD_UNITS = $(DESTDIR)$(PREFIX)/lib/systemd/system
SHARE = $(DESTDIR)$(PREFIX)/share/naviscan

# Print what .ci/run needs to call a script directly: sudo when not root, the .deb make deb makes.
sudo:
	@echo $(SUDO)
deb-file:
	@echo $(DEB_FILE)

# Prints the Debian runtime packages the installed binary needs (scripts/ci/check-install.sh checks the list).
runtime-packages:
	@echo $(RUNTIME_PACKAGES)

.PHONY: all sudo deb-file runtime-packages swift-check swift-path deps ci-deps build-tests browser-deps test-browser test-slurm check-kubernetes screenshots build test demo bench bench-check bench-thresholds speed-bar fuzz fuzz-check tempo-cv tempo-model key-model similarity-model install uninstall man generated-man check-man check-install deb test-deb image-deps image test-image clean

all: build

# Installs the C libraries' -dev packages when any is missing (after apt-get update), PyYAML, which
# the tests parse dist/kubernetes's recipes with, mutagen, which reads back the tags naviscan tag writes,
# and ffmpeg, whose ffprobe plays back the playlists naviscan mix writes.
deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists $(PKGCONFIG_MODULES) || \
		! python3 -c 'import yaml' >/dev/null 2>&1 || ! /usr/bin/python3 -c 'import mutagen' >/dev/null 2>&1 || \
		! command -v ffprobe >/dev/null 2>&1; then \
		echo "==> installing $(DEB_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(DEB_PACKAGES); \
	fi

# CI's one apt step: what every target CI runs installs on its own when missing (deps, browser-deps,
# KUBERNETES_CHECK_PACKAGES, test-slurm, tempo-cv, check-install, deb, test-deb), in one update and one install.
CI_PACKAGES = $(DEB_PACKAGES) chromium python3 $(KUBERNETES_CHECK_PACKAGES) slurmctld slurmd slurm-client munge sqlite3 jq \
	fluidsynth fluid-soundfont-gm lame openmpt123 libopenmpt0 python3-numpy python3-mido python3-soundfile python3-scipy \
	systemd dpkg-dev binutils mmdebstrap
ci-deps:
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(CI_PACKAGES) > /dev/null

ifeq ($(STATIC_FROM_TESTS),1)
# CI compiles naviscan once: `build` links the static binary from the objects of the tests' release
# build (the same compile; -static-stdlib changes only the link), see scripts/ci/link-static.py.
build: build-tests
	@[ $(NAVISCAN) -nt $(TEST_BUILD_DIR)/release/naviscan ] || python3 scripts/ci/link-static.py $(TEST_BUILD_DIR) $(NAVISCAN)
else
build: deps swift-check
	$(SWIFT) build $(RELEASE_FLAGS) --product naviscan
endif

# The release build of every target and the tests (dynamically linked).
build-tests: deps swift-check
	$(SWIFT) build $(TEST_FLAGS) --build-tests

# A plain message, not "swift: command not found", when no toolchain can be found.
swift-check:
	@command -v $(SWIFT) >/dev/null 2>&1 || { echo "make: no Swift toolchain found (Swift 6.2 or later builds naviscan): \
	install one from https://www.swift.org/install/linux/ to /opt/swift, or pass SWIFT=/path/to/swift" >&2; exit 1; }

# The toolchain make uses (scripts/ci/check-install.sh checks that sudo's PATH finds one).
swift-path:
	@echo $(SWIFT)

# The whole suite on the release build, against the naviscan binary built beside the tests: the unit
# tests in parallel, then the end-to-end suites (END_TO_END) one at a time, since live servers and scans
# on a 2-core machine starve each other. `swift test` alone runs everything on the debug build.
test: build build-tests
	NAVISCAN_EXECUTABLE=$(abspath $(NAVISCAN)) $(SWIFT) test $(TEST_FLAGS) --skip-build --skip '$(END_TO_END)'
	NAVISCAN_EXECUTABLE=$(abspath $(NAVISCAN)) $(SWIFT) test $(TEST_FLAGS) --skip-build --no-parallel --filter '$(END_TO_END)'

# The web page in a real browser (Debian's chromium, headless, over the DevTools protocol; a python3
# stdlib client): the table lists the demo library, the track page draws its visualizer (and its
# waveform where the server has /waveform), the audio loads through /stream with a Range request.
test-browser: build browser-deps
	python3 scripts/ci/browser-test.py $(NAVISCAN)

# The same run, keeping a screenshot of each page for the README (docs/screenshots/).
screenshots: build browser-deps
	python3 scripts/ci/browser-test.py $(NAVISCAN) --screenshots docs/screenshots

# The Slurm recipe (dist/slurm) as shipped, on a one-node Slurm started by hand on this machine (Debian's
# slurmctld, slurmd and munge, installed when missing; no systemd): a 4-shard scan and its merge equal a
# single scan, a failed shard makes the merge exit 1, and running submit.sh again re-runs only that
# shard. Needs root for apt-get and slurmd; leaves nothing behind. See scripts/ci/slurm-test.sh.
test-slurm: build
	$(SUDO) scripts/ci/slurm-test.sh $(NAVISCAN)

# The Kubernetes recipe (dist/kubernetes) without a cluster: submit.sh's YAML for three sets of variables
# checked against the Kubernetes client's models (Debian's python3-kubernetes; unknown fields, wrong types
# and missing required fields fail, and the checker must reject broken manifests), the Jobs, claims and
# service account consistent; submit.sh against a fake kubectl; the merge's wait against a fake API server
# (HTTPS); the pods' scripts with a stand-in naviscan, then with the real one. About 20 s. This and
# test-slurm are the recipes' one test layer each. See scripts/ci/check-kubernetes.py.
KUBERNETES_CHECK_PACKAGES := python3-yaml python3-kubernetes curl openssl
check-kubernetes: build
	@if ! /usr/bin/python3 -c 'import yaml, kubernetes' >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1 || \
		! command -v openssl >/dev/null 2>&1; then \
		echo "==> installing $(KUBERNETES_CHECK_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(KUBERNETES_CHECK_PACKAGES); \
	fi
	/usr/bin/python3 scripts/ci/check-kubernetes.py --naviscan $(NAVISCAN)

browser-deps:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then \
		echo "==> installing chromium python3"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium python3; \
	fi

# Scans the bundled demo library (Fixtures/demo), prints one track's DJ profile, draws its frames as text.
demo: build
	@mkdir -p $(DEMO_OUT)
	$(NAVISCAN) scan Fixtures/demo --out $(DEMO_OUT)/store
	$(NAVISCAN) analyze Fixtures/demo/groove_120bpm.mp3 --vis $(DEMO_OUT)/groove.vis --dj
	$(NAVISCAN) inspect $(DEMO_OUT)/groove.vis --rows 20

# The whole suite: wall clock, x-realtime, mallocs and peak memory per stage and per track.
bench: deps build
	cd Benchmarks && NAVISCAN_EXECUTABLE=$(abspath $(NAVISCAN)) $(SWIFT) package --allow-writing-to-package-directory benchmark

# CI's smoke of the suite: runs every benchmark and fails when a malloc count moves more than 100
# from Benchmarks/Thresholds (an allocation per block or per frame). Time is never checked.
# It shares TEST_BUILD_DIR (the same release flags), so naviscan's modules built for the tests are reused.
bench-check: deps build
	cd Benchmarks && NAVISCAN_EXECUTABLE=$(abspath $(NAVISCAN)) NAVISCAN_BENCH_ITERATIONS=3 $(SWIFT) package --scratch-path $(abspath $(TEST_BUILD_DIR)) --allow-writing-to-package-directory benchmark thresholds check --metric mallocCountTotal --no-progress

# Rewrites Benchmarks/Thresholds from a run (after a deliberate change in allocations).
bench-thresholds: deps build
	cd Benchmarks && NAVISCAN_EXECUTABLE=$(abspath $(NAVISCAN)) $(SWIFT) package --allow-writing-to-package-directory benchmark thresholds update --metric mallocCountTotal --no-progress

# The speed bar on ../shared/corpus's music against the plain-C floor, per format and source rate
# (see scripts/ci/speed-bar.sh; scripts/ci/speed-corpus.sh makes the rate and codec copies with sox and ffmpeg).
SPEED_BAR_PACKAGES := sox ffmpeg gcc bc
speed-bar: build
	@for tool in $(SPEED_BAR_PACKAGES); do command -v $$tool >/dev/null 2>&1 || missing=1; done; \
	if [ -n "$$missing" ]; then $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(SPEED_BAR_PACKAGES); fi
	scripts/ci/speed-bar.sh

# Fuzzes every reader of untrusted files for FUZZ_SECONDS (default 300): libFuzzer when
# `swiftc -sanitize=fuzzer` links, else the mutation driver (see scripts/ci/fuzz/README.md).
FUZZ_SECONDS ?= 300
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) SWIFT=$(SWIFT) scripts/ci/fuzz/run.sh

# CI's short fixed-seed pass: the same inputs on every run, so a failure reproduces.
FUZZ_CHECK_ITERATIONS ?= 3000
# The fuzz target comes from the tests' release build (build-tests builds every product).
fuzz-check: build-tests
	FUZZ=$(TEST_BUILD_DIR)/release/naviscan-fuzz scripts/ci/fuzz/make-corpus.sh $(TEST_BUILD_DIR)/fuzz-corpus
	$(TEST_BUILD_DIR)/release/naviscan-fuzz $(TEST_BUILD_DIR)/fuzz-corpus --seed 1 --iterations $(FUZZ_CHECK_ITERATIONS) --artifacts $(TEST_BUILD_DIR)/fuzz-artifacts

# The tempo model's package in CI (scripts/tempo-cv.sh): its unit tests, every variant fitted
# leave-one-source-out on a small fixed set (16 grooves of ../shared/tempo, 4 tracker modules of
# ../shared/modtempo, 6 folds; tempomodel.cv --subset small), the Python twin against the binary on those
# 20 tracks, and the grooves' beat grids against their truth (tempomodel.score_beats), with the debug
# build. Renders its data once into NAVISCAN_TEMPO_DATA (default ~/.cache/naviscan-ci-tempo; installs
# fluidsynth, openmpt123, lame and python3-numpy/scipy/mido/soundfile from apt when missing). About 4
# minutes on a fresh 2-core machine (apt and the renders 2.5 of them), 1.5 once the data is there.
tempo-cv: build
	bash scripts/tempo-cv.sh $(NAVISCAN)

# The key model (docs/key-model.md): renders the key dev set into NAVISCAN_KEY_DATA (default
# ~/.cache/naviscan-key; about 40 minutes the first time), dumps what the key decision reads with the
# release build, fits the model in folds by source (prints every variant's fold figures) and writes
# Sources/NaviscanCore/Key/KeyModel+Shipped.swift and Fixtures/key/parity.json. Not part of CI.
key-model: build
	bash scripts/key-model/build.sh $(NAVISCAN)

# The tempo model (docs/tempo-model.md): renders its training sets into NAVISCAN_TEMPO_MODEL_DATA (default
# ~/.cache/naviscan-tempo-model; about an hour on 2 cores the first time), dumps them with the release
# build, fits every variant in folds by source (prints their held-out table), writes the chosen one to
# TempoModel+Shipped.swift and the parity fixtures to Fixtures/tempo-model/.
tempo-model: build
	bash scripts/tempo-model/build.sh $(NAVISCAN)

# The similarity model (docs/similarity.md): builds the dev sets into NAVISCAN_SIMILARITY_DATA
# (default ~/.cache/naviscan-simdev; ~30 minutes and 1.3 GB of downloads the first time), chooses
# the model in folds by source, writes SimilarityModel+Shipped.swift and Fixtures/similarity/.
similarity-model: build
	bash scripts/similarity-model/build.sh $(NAVISCAN)

# The binary, its man page, bash/zsh/fish completions, the systemd units (dist/) and an example
# config. `make install PREFIX=/usr DESTDIR=pkg` for packaging.
install: build
	install -d $(BINDIR) $(MANDIR) $(BASH_COMPLETIONS) $(ZSH_COMPLETIONS) $(FISH_COMPLETIONS) $(SYSTEMD_UNITS) $(SHARE)
	install -m 755 $(NAVISCAN) $(BINDIR)/naviscan
	install -m 644 docs/naviscan.1 $(MANDIR)/naviscan.1
	$(NAVISCAN) --generate-completion-script bash > $(BASH_COMPLETIONS)/naviscan
	$(NAVISCAN) --generate-completion-script zsh > $(ZSH_COMPLETIONS)/_naviscan
	$(NAVISCAN) --generate-completion-script fish > $(FISH_COMPLETIONS)/naviscan.fish
	sed 's|/usr/local/bin/naviscan|$(PREFIX)/bin/naviscan|' dist/naviscan-serve.service > $(SYSTEMD_UNITS)/naviscan-serve.service
	sed 's|/usr/local/bin/naviscan|$(PREFIX)/bin/naviscan|' dist/naviscan-scan.service > $(SYSTEMD_UNITS)/naviscan-scan.service
	install -m 644 dist/naviscan-scan.timer $(SYSTEMD_UNITS)/naviscan-scan.timer
	install -m 644 dist/config.example.json $(SHARE)/config.example.json
	install -d $(SHARE)/web $(SHARE)/slurm $(SHARE)/kubernetes
	install -m 644 Sources/NaviscanServer/Web/Assets/* $(SHARE)/web/
	install -m 755 dist/slurm/* $(SHARE)/slurm/
	install -m 644 dist/kubernetes/*.yaml $(SHARE)/kubernetes/
	install -m 755 dist/kubernetes/submit.sh $(SHARE)/kubernetes/
	@echo "installed $(BINDIR)/naviscan; it needs these Debian packages at run time: $(RUNTIME_PACKAGES)"

uninstall:
	rm -f $(BINDIR)/naviscan $(MANDIR)/naviscan.1 $(BASH_COMPLETIONS)/naviscan $(ZSH_COMPLETIONS)/_naviscan \
		$(FISH_COMPLETIONS)/naviscan.fish $(SYSTEMD_UNITS)/naviscan-serve.service $(SYSTEMD_UNITS)/naviscan-scan.service \
		$(SYSTEMD_UNITS)/naviscan-scan.timer $(SHARE)/config.example.json
	rm -rf $(SHARE)/web $(SHARE)/slurm $(SHARE)/kubernetes
	-rmdir $(SHARE) 2>/dev/null

# Regenerates docs/naviscan.1 from the commands' help: swift-argument-parser's generate-manual tool (what
# its plugin runs) on the release binary.
MAN_OUT = $(TEST_BUILD_DIR)/man
man: generated-man
	cp $(MAN_OUT)/naviscan.1 docs/naviscan.1

# $(MAN_OUT)/naviscan.1 from the release binary's help (make man and make check-man).
generated-man: build
	$(SWIFT) build $(TEST_FLAGS) --product generate-manual
	mkdir -p $(MAN_OUT)
	$(TEST_BUILD_DIR)/release/generate-manual $(NAVISCAN) --output-directory $(MAN_OUT)

# Fails when docs/naviscan.1 is not what `make man` makes from the commands' help now (the date aside),
# so the man page cannot drift from --help.
check-man: generated-man
	@generated=$(MAN_OUT)/naviscan.1; \
	if ! diff <(grep -v '^\.Dd' "$$generated") <(grep -v '^\.Dd' docs/naviscan.1) > /dev/null; then \
		diff <(grep -v '^\.Dd' "$$generated") <(grep -v '^\.Dd' docs/naviscan.1) | head -20; \
		echo "FAIL: docs/naviscan.1 differs from the commands' help; run make man and commit it" >&2; exit 1; \
	fi; echo "docs/naviscan.1 matches the help"

# Installs into a scratch directory, runs the installed binary with the Swift toolchain hidden (a
# private mount namespace with an empty tmpfs over it), and checks the systemd units with
# systemd-analyze verify (installed from apt when missing). See scripts/ci/check-install.sh.
check-install: deps
	@command -v systemd-analyze >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq systemd; }
	scripts/ci/check-install.sh

# $(DIST_OUT)/naviscan_VERSION_ARCH.deb: make install PREFIX=/usr of the static build, stripped, Depends
# from dpkg-shlibdeps checked against RUNTIME_PACKAGES, /etc/naviscan/config.json, the naviscan user
# created on install, units installed disabled. See scripts/package/make-deb.sh and docs/install.md.
deb: build
	@command -v dpkg-shlibdeps >/dev/null 2>&1 && command -v strip >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq dpkg-dev binutils; }
	BUILD_DIR=$(BUILD_DIR) DEB_COMPRESSION=$(DEB_COMPRESSION) scripts/package/make-deb.sh $(DIST_OUT)

# The .deb's and the image archives' names; VERSION is what the built binary's --version prints.
VERSION = $(shell $(NAVISCAN) --version 2>/dev/null)
DEB_ARCH = $(shell dpkg --print-architecture)
DEB_FILE = $(DIST_OUT)/naviscan_$(VERSION)_$(DEB_ARCH).deb
IMAGE_BASE = $(DIST_OUT)/naviscan-$(VERSION)-$(DEB_ARCH)

# The .deb on a clean Debian root (mmdebstrap, installed when missing) without the Swift toolchain:
# apt-get install ./naviscan_*.deb, a scan with the shipped config as the naviscan user, serve, purge.
# Needs root. See scripts/ci/test-deb.sh.
test-deb: deb
	@command -v mmdebstrap >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq mmdebstrap; }
	$(SUDO) scripts/ci/test-deb.sh $(DEB_FILE)

IMAGE_TOOLS := mmdebstrap buildah podman runc podman-compose
image-deps:
	@for tool in $(IMAGE_TOOLS); do command -v $$tool >/dev/null 2>&1 || [ -x /usr/sbin/$$tool ] || missing=1; done; \
	if [ -n "$$missing" ]; then $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(IMAGE_TOOLS); fi

# The container image, without any registry: a clean Debian root with the .deb installed, made an image
# by buildah; $(IMAGE_BASE).docker.tar (with the HEALTHCHECK) and .oci.tar for `podman load -i` or
# `docker load -i`. Needs root. See scripts/package/make-image.sh and docs/install.md.
image: deb image-deps
	$(SUDO) scripts/package/make-image.sh $(DEB_FILE) $(DIST_OUT)

# Both archives loaded by podman (runc) and run: the demo library read-only at /music, scan, serve,
# GET /health and a profile, the HEALTHCHECK, dist/compose.yaml with podman-compose. Needs root. Not in
# CI (about 5 minutes with make image; containers here need runc and explicit limits). See scripts/ci/test-image.sh.
test-image: image
	$(SUDO) scripts/ci/test-image.sh $(IMAGE_BASE).docker.tar $(IMAGE_BASE).oci.tar

clean:
	rm -rf .build .build-fuzz $(BUILD_DIR) $(TEST_BUILD_DIR) Benchmarks/.build $(DEMO_OUT) $(DIST_OUT)
