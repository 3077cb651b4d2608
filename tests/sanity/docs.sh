#!/usr/bin/env bash
# Every plugin renders with ansible-doc, as a user meets it (a page of its own, non-empty, no warnings): one
# ansible-doc process per plugin type (tests/sanity/docs.py says how the pages are told apart).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
exec python tests/sanity/docs.py
