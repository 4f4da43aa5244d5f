/** A link to a console page: `#/db/acme`. Names only (never a credential). */
export const href = (...parts: string[]) => '#/' + parts.map(encodeURIComponent).join('/');
