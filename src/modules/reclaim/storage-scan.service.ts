import * as path from 'node:path';
import { Injectable } from '@nestjs/common';
import { TableStorage } from '../../engine/storage/table-storage.service';
import { AuditService } from '../audit';
import { PendingLocationsRepository } from '../../platform/cluster/pending-locations.repository';

export interface UnknownEntry {
  /** Relative to STORAGE_ROOT, like catalog locations. */
  location: string;
  path: string;
  bytes: number;
  files: number;
  modified_at: string | null;
}

export interface ScanReport {
  database: string;
  database_exists: boolean;
  folder: string;
  /** The whole folder is recorded for clean-up (a database deletion under way): the reclaimer deletes it. */
  pending_cleanup: boolean;
  unknown: UnknownEntry[];
  unknown_bytes: number;
  deleted: boolean;
}

/**
 * `npm run admin -- storage scan <db> [--delete]`: what lies in a database's storage folder that no catalog row,
 * pending record or running cascade drop knows (leftovers of crashes before pending records existed, of hand
 * copies, of data staged but never registered). A dry run unless asked to delete. Only the storage layer's list,
 * measure and remove are used, so an object store works the same way.
 *
 * The folder is listed before each finding is checked against the catalog once more: a gateway records a location
 * before it creates anything there, so whatever a live write was making when the listing saw it is known by then
 * and is left alone.
 */
@Injectable()
export class StorageScan {
  constructor(
    private readonly repo: PendingLocationsRepository,
    private readonly storage: TableStorage,
    private readonly audit: AuditService,
  ) {}

  async scan(databaseName: string, opts: { delete: boolean; actor: string }): Promise<ScanReport> {
    // A deleted database's folder is looked for in the default profile.
    const db = await this.repo.databaseByName(databaseName);
    const databaseId = db?.id ?? null;
    const folder = this.storage.databaseFolder(databaseName, '', db?.storageProfile);
    const known = new Set((await this.repo.knownUnder(databaseId, folder)).map((l) => path.normalize(l)));
    const report: ScanReport = {
      database: databaseName,
      database_exists: databaseId !== null,
      folder: this.storage.uri(folder),
      pending_cleanup: known.has(folder),
      unknown: [],
      unknown_bytes: 0,
      deleted: false,
    };
    if (report.pending_cleanup) return report;

    // Folders on the way to a known location are containers: looked into, never reported themselves.
    const containers = new Set<string>();
    for (const l of known) {
      for (let d = path.dirname(l); d !== '.' && d !== folder && d.startsWith(folder + path.sep); d = path.dirname(d)) containers.add(d);
    }
    const candidates: string[] = [];
    const visit = async (dir: string): Promise<void> => {
      for (const e of await this.storage.list(dir)) {
        const rel = path.join(dir, e.name);
        if (known.has(rel)) continue;
        if (e.isDir && containers.has(rel)) await visit(rel);
        else candidates.push(rel);
      }
    };
    await visit(folder);

    for (const location of candidates) {
      if (await this.repo.knows(location)) continue; // recorded meanwhile: a write under way
      const u = await this.storage.usage(location);
      report.unknown.push({
        location,
        path: this.storage.uri(location),
        bytes: u.bytes,
        files: u.files,
        modified_at: u.modifiedMs === null ? null : new Date(u.modifiedMs).toISOString(),
      });
      report.unknown_bytes += u.bytes;
    }
    if (!opts.delete) return report;
    for (const entry of report.unknown) {
      if (await this.repo.knows(entry.location)) continue;
      await this.storage.remove(entry.location);
      await this.audit.record({
        databaseId: databaseId ?? undefined,
        databaseName,
        actor: opts.actor,
        action: 'storage.scan_delete',
        target: entry.location,
        details: { bytes: entry.bytes, files: entry.files },
      });
    }
    report.deleted = true;
    return report;
  }
}
