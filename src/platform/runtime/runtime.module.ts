import { Module } from '@nestjs/common';
import { AllocatorRetention } from './allocator-retention';
import { YoungGenerationRelease } from './young-generation-release';

/**
 * The gateway's run-time memory tuning, registered once by the composition root (docs/adr/0008-memory-tuning.md):
 * allocator retention (jemalloc keeps the engine's read buffers between reads) and the heap release when the process
 * goes quiet. The flags and allocator settings made at process start are in scripts/start.sh. Both use the metrics
 * registry (ObservabilityModule, global); observability imports nothing from here.
 */
@Module({ providers: [AllocatorRetention, YoungGenerationRelease] })
export class RuntimeModule {}
