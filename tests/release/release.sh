#!/usr/bin/env bash
# `make release VERSION=x.y.z`: galaxy.yml's version becomes VERSION, the fragments become that release of
# changelogs/changelog.yaml (with the plugins whose version_added is VERSION), CHANGELOG.md is regenerated, and the
# checks that tie them together run (docs/releasing.md). Commit, tag vVERSION, then `make build` and publish.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
version=${1:-}
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "release: give the version, like make release VERSION=0.5.0"; exit 2; }
ls changelogs/fragments/*.y*ml >/dev/null 2>&1 || { echo "release: no fragments in changelogs/fragments"; exit 1; }
ls changelogs/fragments/*.y*ml | xargs grep -l '^release_summary:' >/dev/null \
  || { echo "release: add changelogs/fragments/$version.yml with a release_summary first"; exit 1; }
# the changelog first: when it fails (a bad fragment), nothing else has changed
ANSIBLE_COLLECTIONS_PATH="$root/.collections" antsibull-changelog release --version "$version"
sed -i "s/^version: .*/version: $version/" galaxy.yml
sed -i "s/^    version: .*/    version: $version/" ee/requirements.yml
sed -i "s/aifabric-lab-ee:[0-9.]*/aifabric-lab-ee:$version/" ee/execution-environment.yml
pytest -q -p no:cacheprovider tests/unit/plugins/test_release.py
antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
echo "released $version: galaxy.yml, changelogs/changelog.yaml, CHANGELOG.md, ee/; commit and tag v$version"
