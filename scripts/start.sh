#!/bin/sh
# Runs node with the gateway's allocator settings (docs/production.md#memory): `sh scripts/start.sh dist/src/main.js`.
# npm start, npm run start:prod, the Dockerfile and the benchmarks all start the gateway through this file.
#
# - jemalloc when the system has it (Debian/Ubuntu package libjemalloc2; the Docker image installs it): four arenas
#   (with two, the engine's scan threads wait on each other: k=10 vector queries ran 20-30% slower),
#   freed memory returned to the system by a background thread within about a tenth of a second (allocator retention
#   keeps it between reads instead: it is write memory this bounds; a second let 1.1 GB uploads peak 10-20 MiB
#   higher and 8 concurrent inserts 60 MiB higher), large buffers (≥16 MiB, the engine's write buffers) in their own
#   extents so they are released whole. The engine's query buffers are reused instead of mapped afresh on every
#   query, which glibc's settings below cannot do.
# - otherwise glibc: two arenas and blocks of 1 MiB or more returned to the system when freed (bounded write memory,
#   at the cost of slower brute-force vector queries).
# - V8, at start only (nothing changes V8 flags at run time): semi-spaces of up to 32 MiB (node's own default is 16
#   on a machine with plenty of memory, 4 on a small container; a page of 100 tables cost about 30% less CPU with 32
#   than with 16, and 16 about 30% less than 4: under load the requests in flight are copied at every scavenge, so
#   fewer scavenges cost less); sweeping after a full collection on the main thread (--no-concurrent-sweeping: a catalog read after
#   a quiet spell cost less CPU); --expose-gc for the heap release (src/platform/runtime/young-generation-release.ts),
#   which gives the young generation and dead upload buffers back once the gateway is quiet (idle memory).
#   Measurements of each: docs/adr/0008-memory-tuning.md.
# LGW_NODE_FLAGS replaces the three V8 flags ("" for node's defaults; without --expose-gc the heap release is off).
# Settings the caller already made win; LGW_ALLOCATOR=glibc skips jemalloc. `exec`: no extra process, and signals
# (SIGTERM for a graceful stop) reach node itself.
set -e
if [ -z "${LD_PRELOAD:-}" ] && [ "${LGW_ALLOCATOR:-jemalloc}" = jemalloc ]; then
  for lib in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 \
    /usr/lib64/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2; do
    if [ -r "$lib" ]; then
      export LD_PRELOAD="$lib"
      export MALLOC_CONF="${MALLOC_CONF:-narenas:4,background_thread:true,dirty_decay_ms:100,muzzy_decay_ms:0,oversize_threshold:16777216}"
      break
    fi
  done
fi
if [ -z "${LD_PRELOAD:-}" ]; then
  export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
  export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-1048576}"
fi
# shellcheck disable=SC2086 # the flags are words
exec node ${LGW_NODE_FLAGS---max-semi-space-size=32 --no-concurrent-sweeping --expose-gc} "$@"
