/** A link to a console page: `#/db/acme`. Names only (never a credential). */
export const href = (...parts: string[]) => '#/' + parts.map(encodeURIComponent).join('/');

/** A link to a page of a database: `#/db/acme/table/prod$items`. */
export const dbHref = (database: string, ...parts: string[]) => href('db', database, ...parts);
