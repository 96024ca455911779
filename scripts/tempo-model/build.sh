#!/usr/bin/env bash
# build.sh NAVISCAN -- `make tempo-model`: the training sets, the fit in folds, the model file, the parity
# fixtures (docs/tempo-model.md).
#
# 1. build-data.sh renders every training set into DATA (NAVISCAN_TEMPO_MODEL_DATA, default
#    ~/.cache/naviscan-tempo-model; about an hour on 2 cores the first time, seconds after).
# 2. python3 -m tempomodel.cv dumps the onset bands of every track with NAVISCAN (into DATA/dumps; delete
#    it when the onset front end changes), fits every variant in folds by source, prints their held-out
#    table, and writes the variant the inner folds choose, fitted on every source, to
#    Sources/NaviscanCore/Tempo/TempoModel+Shipped.swift with its provenance.
# 3. python3 -m tempomodel.parity writes Fixtures/tempo-model/ (dumps and the twin's reading of them
#    under the new file), which TempoModelTests compares with the Swift.
# Reports: DATA/cv.txt, DATA/cv.json. Env: JOBS (default: the cores).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
NAVISCAN="${1:-${NAVISCAN:-}}"
[ -x "$NAVISCAN" ] || { echo "usage: $0 NAVISCAN_BINARY" >&2; exit 2; }
NAVISCAN="$(cd "$(dirname "$NAVISCAN")" && pwd)/$(basename "$NAVISCAN")"
DATA="${NAVISCAN_TEMPO_MODEL_DATA:-$HOME/.cache/naviscan-tempo-model}"
JOBS="${JOBS:-$(nproc)}"
JOBS=$JOBS bash "$HERE/build-data.sh" "$DATA"
cd "$HERE"
/usr/bin/python3 -m tempomodel.cv --data "$DATA" --cache "$DATA/dumps" --naviscan "$NAVISCAN" --jobs "$JOBS" \
    --write-model "$ROOT/Sources/NaviscanCore/Tempo/TempoModel+Shipped.swift" --json "$DATA/cv.json" | tee "$DATA/cv.txt"
/usr/bin/python3 -m tempomodel.parity --data "$DATA" --cache "$DATA/dumps" --out "$ROOT/Fixtures/tempo-model"
echo "tempo model written; run the tests (TempoModelTests) with the new file" >&2
