#!/usr/bin/env bash
# The release tier: the changelog's fragments and releases are valid (antsibull-changelog lint), every plugin's and
# role's documentation passes antsibull-docs' lint (semantic markup references included), and the docsite builds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
antsibull-changelog lint
antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
echo "changelog: fragments and changelogs/changelog.yaml are valid"
ANSIBLE_COLLECTIONS_PATH="$root/.collections" antsibull-docs lint-collection-docs --plugin-docs \
  --check-extra-docs-refs .
echo "antsibull-docs lint-collection-docs: clean"
bash docs/docsite/build.sh
