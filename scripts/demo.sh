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
echo "crawling: gossamer crawl http://site0.test:$PORT/ --allow-domain test \\"
echo "    --resolve '*.test=127.0.0.1' --out $OUT --overwrite --robots-retry 1"
"$BIN/gossamer" crawl "http://site0.test:$PORT/" --allow-domain test \
    --resolve '*.test=127.0.0.1' --out "$OUT" --overwrite --robots-retry 1
echo
echo "one record of $OUT/pages.jsonl, its text shortened:"
"$BIN/python" - "$OUT/pages.jsonl" <<'EOF'
import json
import sys
import textwrap

with open(sys.argv[1], encoding="utf-8") as lines:
    records = (json.loads(line) for line in lines)
    record = next(r for r in records if r["status"] == 200 and r["text"])
text = record["text"]
record["text"] = text[:160] + ("..." if len(text) > 160 else "")
print(json.dumps(record, ensure_ascii=False, indent=1))
print(f"\nits text ({len(text)} characters, language {record['lang']}):")
for paragraph in text[:700].split("\n\n")[:4]:
    print(textwrap.fill(paragraph, 96, initial_indent="  ", subsequent_indent="  "), end="\n\n")
print("  ...")
EOF
