#!/bin/sh
# Runs node with the gateway's allocator settings (README "Memory"): `sh scripts/start.sh dist/src/main.js`.
# npm start, npm run start:prod, the Dockerfile and the benchmarks all start the gateway through this file.
#
# - jemalloc when the system has it (Debian/Ubuntu package libjemalloc2; the Docker image installs it): four arenas
#   (with two, the engine's scan threads wait on each other: k=10 vector queries ran 20-30% slower),
#   freed memory returned to the system by a background thread within about a second, large buffers (≥16 MiB, the
#   engine's write buffers) in their own extents so they are released whole. The engine's query buffers are reused
#   instead of mapped afresh on every query, which glibc's settings below cannot do.
# - otherwise glibc: two arenas and blocks of 1 MiB or more returned to the system when freed (bounded write memory,
#   at the cost of slower brute-force vector queries).
# - V8: semi-spaces of up to 16 MiB, node's own default on a machine with plenty of memory (it picks less where its
#   heap limit is small, hence set here; it was 4 until 2026-11-26): with 4, a page of 100 tables cost about 30% more
#   CPU (its objects were promoted to the old generation under load). The gateway gives the young generation back
#   once it has been quiet for a few seconds (src/platform/runtime/young-generation-release.ts), so idle memory
#   stays where 4 MiB kept it.
# - V8: sweeping after a full collection on the main thread (--no-concurrent-sweeping). With V8's background sweeper,
#   a catalog read after a quiet spell cost 14-28% more CPU on a 2-core machine in 8 of 8 side-by-side rounds
#   (2026-11-27, README "Benchmarks"); uploads were not slower without it.
# LGW_NODE_FLAGS replaces both V8 flags ("" for node's defaults).
# Settings the caller already made win; LGW_ALLOCATOR=glibc skips jemalloc. `exec`: no extra process, and signals
# (SIGTERM for a graceful stop) reach node itself.
set -e
if [ -z "${LD_PRELOAD:-}" ] && [ "${LGW_ALLOCATOR:-jemalloc}" = jemalloc ]; then
  for lib in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 \
    /usr/lib64/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2; do
    if [ -r "$lib" ]; then
      export LD_PRELOAD="$lib"
      export MALLOC_CONF="${MALLOC_CONF:-narenas:4,background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,oversize_threshold:16777216}"
      break
    fi
  done
fi
if [ -z "${LD_PRELOAD:-}" ]; then
  export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
  export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-1048576}"
fi
# shellcheck disable=SC2086 # the flags are words
exec node ${LGW_NODE_FLAGS---max-semi-space-size=16 --no-concurrent-sweeping} "$@"
