/** Removes everything stored under a location (engine/storage's TableStorage provides it, see StorageModule). */
export interface LocationRemover {
  remove(location: string): Promise<void>;
}

/** The injection token of the LocationRemover that PendingLocations' clean-ups use. */
export const LOCATION_REMOVER = Symbol('LOCATION_REMOVER');
