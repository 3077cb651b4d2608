#!/usr/bin/env bash
# The unit tests that need root (they create network namespaces and veth pairs of their own, prefixed aflt-, and
# remove them): `pytest tests/unit` skips them for other users, this target runs them.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../../.." && pwd)
cd "$root"
pytest -q -p no:cacheprovider -m needs_root tests/unit
