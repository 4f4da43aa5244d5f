import { Global, Injectable, Module } from '@nestjs/common';

/**
 * Commits the gateway learns of without making them (a namespace-mode writer's version/create, a describe with a
 * write key): whoever sees one says so here, and whoever cares subscribes (table maintenance, MaintenanceService,
 * queues the table's job). Global, so the table modules need nothing of their subscribers.
 */
@Injectable()
export class TableWriteSignals {
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
@Module({ providers: [TableWriteSignals], exports: [TableWriteSignals] })
export class TableWriteSignalsModule {}
