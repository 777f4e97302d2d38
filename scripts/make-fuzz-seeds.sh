#!/usr/bin/env bash
# Regenerates the fuzzers' seed corpora (fuzz/corpus/<target>/) with clocktrain's own writers, so the
# seeds are valid files of the current formats. Inputs the fuzzers once crashed on (fuzz/corpus/*/
# crash-*) are kept. Run after a format changes, then commit fuzz/corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target make_fuzz_seeds -j"${JOBS:-2}"
./build/fuzz/fuzz/make_fuzz_seeds fuzz/corpus
