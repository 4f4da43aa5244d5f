/**
 * The signed-in credential. Kept in sessionStorage only (this tab, gone when it closes): never localStorage, never a
 * cookie, never a URL, never logged.
 */
export type Session = { kind: 'operator'; key: string } | { kind: 'database'; key: string; database: string };

const STORAGE_KEY = 'lgw-console-session';

export function loadSession(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return undefined;
    const s = JSON.parse(raw) as Session;
    if (s.kind === 'operator' && typeof s.key === 'string') return s;
    if (s.kind === 'database' && typeof s.key === 'string' && typeof s.database === 'string') return s;
  } catch {
    /* unreadable: signed out */
  }
  return undefined;
}

export function saveSession(s: Session): void {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(s));
}

export function clearSession(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}
