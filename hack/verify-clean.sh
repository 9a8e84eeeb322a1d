#!/usr/bin/env bash
# Fails when generators or formatters changed tracked files or left new ones.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! git diff --quiet --exit-code || [ -n "$(git ls-files --others --exclude-standard)" ]; then
  echo "verify: generated files are stale; run 'make generate manifests fmt' and commit:" >&2
  git status --short >&2
  git --no-pager diff --stat >&2
  exit 1
fi
echo "verify: generated files are current"
