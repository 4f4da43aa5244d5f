import { Global, Injectable, Module } from '@nestjs/common';

/**
 * Commits the gateway learns of without making them (a namespace-mode writer's version/create, a describe with a
 * write key): whoever sees one says so here, and table maintenance (MaintenanceService) queues the table's job. A
 * module of its own, so the table modules need nothing of maintenance's.
 */
@Injectable()
export class MaintenanceSignals {
  private readonly listeners: Array<(tableId: string) => void> = [];

  on(fn: (tableId: string) => void): void {
    this.listeners.push(fn);
  }

  /** The table (catalog id) may have new commits. Never throws, never waits. */
  touched(tableId: string): void {
    for (const fn of this.listeners) {
      try {
        fn(tableId);
      } catch {
        /* a listener's failure is its own */
      }
    }
  }
}

@Global()
@Module({ providers: [MaintenanceSignals], exports: [MaintenanceSignals] })
export class MaintenanceSignalsModule {}
