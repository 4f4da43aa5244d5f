#!/usr/bin/env node
// npm leaves optional platform packages that its registry cannot serve out of package-lock.json, and `npm ci`
// then refuses the lock as out of sync. This records such packages (by their platform) so that `npm ci` skips
// them on other platforms without fetching. Run after `npm install` changes the lock.
const fs = require('node:fs');
const path = require('node:path');
const lockPath = path.resolve(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(lockPath, 'utf8'));
const PLATFORM = {
  'darwin-arm64': { os: ['darwin'], cpu: ['arm64'] },
  'darwin-x64': { os: ['darwin'], cpu: ['x64'] },
  'linux-arm64-gnu': { os: ['linux'], cpu: ['arm64'], libc: ['glibc'] },
  'linux-arm64-musl': { os: ['linux'], cpu: ['arm64'], libc: ['musl'] },
  'win32-arm64-msvc': { os: ['win32'], cpu: ['arm64'] },
  'win32-x64-msvc': { os: ['win32'], cpu: ['x64'] },
};
let added = 0;
for (const [key, entry] of Object.entries(lock.packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const suffix = Object.keys(PLATFORM).find((s) => dep.endsWith(`-${s}`));
    const at = `${key ? key + '/' : ''}node_modules/${dep}`.replace(/^node_modules\/(.+\/)?node_modules\//, 'node_modules/$1node_modules/');
    if (!suffix || lock.packages[`node_modules/${dep}`] || lock.packages[at]) continue;
    lock.packages[`node_modules/${dep}`] = { version, optional: true, ...PLATFORM[suffix] };
    added++;
  }
}
fs.writeFileSync(lockPath, JSON.stringify(lock, null, 2) + '\n');
console.log(`recorded ${added} optional platform package(s)`);
