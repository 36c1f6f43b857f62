#!/usr/bin/env bash
# Fails when a tracked C or C++ file differs from what clang-format (.clang-format at the root) makes of it.
# `make format` rewrites them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cc' '*.c')
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/xpool-format.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/xpool-format.$$ | cut -d: -f1 | sort -u | sed 's/^/  not formatted: /'
  rm -f /tmp/xpool-format.$$
  echo "check-format: run 'make format' (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))" >&2
  exit 1
fi
rm -f /tmp/xpool-format.$$
echo "check-format: ${#files[@]} files formatted"
