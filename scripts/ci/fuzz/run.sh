#!/usr/bin/env bash
# `make fuzz`: FUZZ_SECONDS (default 300) of fuzzing the readers of untrusted files.
# libFuzzer (with AddressSanitizer) when `swiftc -sanitize=fuzzer` links, as a separate release
# build in .build-fuzz; otherwise, or with FUZZ_ENGINE=mutation, the deterministic mutation driver
# (FUZZ_SEED picks its inputs). Crashing inputs land in FUZZ_ARTIFACTS (default .build/fuzz-artifacts).
set -euo pipefail
cd "$(dirname "$0")/../../.."
SWIFT=${SWIFT:-swift}
RUN_SECONDS=${FUZZ_SECONDS:-300}
ARTIFACTS=${FUZZ_ARTIFACTS:-.build/fuzz-artifacts}
mkdir -p "$ARTIFACTS"
$SWIFT build --product naviscan-fuzz
scripts/ci/fuzz/make-corpus.sh .build/fuzz-corpus
if [ "${FUZZ_ENGINE:-libfuzzer}" = libfuzzer ] && $SWIFT build -c release --product naviscan-fuzz --build-path .build-fuzz \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -DNAVISCAN_LIBFUZZER; then
    # libFuzzer adds the inputs it finds interesting to the first folder; the seed corpus stays as made.
    mkdir -p .build/fuzz-work
    .build-fuzz/release/naviscan-fuzz .build/fuzz-work .build/fuzz-corpus -max_total_time="$RUN_SECONDS" \
        -timeout=20 -rss_limit_mb=3072 -max_len=262144 -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
else
    .build/debug/naviscan-fuzz .build/fuzz-corpus --seconds "$RUN_SECONDS" --seed "${FUZZ_SEED:-$RANDOM}" --artifacts "$ARTIFACTS"
fi
