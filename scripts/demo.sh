#!/usr/bin/env bash
# make demo: serve the bundled demo web on loopback, crawl it on the embedded default, summarise.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
OUT=${DEMO_OUT:-demo-out}
LOG=$(mktemp)
"$BIN/python" -m gossamer.testweb --port 0 --seed 1 --hosts 6 --pages 60 --crawl-delay 0.2 \
    --specials quick >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 100); do
    grep -q '^serving' "$LOG" && break
    sleep 0.1
done
PORT=$(sed -n 's|^serving .* on http://127.0.0.1:\([0-9]*\).*|\1|p' "$LOG")
[ -n "$PORT" ] || { echo "demo web did not start:"; cat "$LOG"; exit 1; }
echo "demo web: 6 hosts (site0.test ... site5.test) on 127.0.0.1:$PORT"
echo "crawling: gossamer crawl http://site0.test:$PORT/ --allow-domain test --resolve '*.test=127.0.0.1'"
"$BIN/gossamer" crawl "http://site0.test:$PORT/" --allow-domain test \
    --resolve '*.test=127.0.0.1' --out "$OUT" --overwrite --robots-retry 1
echo
echo "first records of $OUT/pages.jsonl:"
head -n 3 "$OUT/pages.jsonl"
