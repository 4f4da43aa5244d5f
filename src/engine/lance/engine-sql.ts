import { Errors } from '../../platform/http/errors';

/**
 * Callers hand the engine SQL text: filters and predicates, update and new-column expressions, column aliases.
 * The engine's expression planner (lance-datafusion 12) turns most bad SQL into an "Invalid input" error, but a few
 * literal forms reach a `todo!()` and panic inside the native code: parameter placeholders (`$1`, `$name`, `?`,
 * `:name`, hence `${jndi:x}`), dollar-quoted strings (`$$…$$`) and prefixed strings (`N'…'`, `B'…'`, `R'…'`, with
 * either quote, either case). A panic is an engine bug, answered 500; so these forms are refused here, before the
 * engine sees them, as the caller's malformed input (400, code 13).
 *
 * The scan only needs to know what is inside a quoted string and what is not. The engine's SQL dialect treats a
 * backslash inside quotes as an escape; to be safe whichever reading applies, the text is scanned both with and
 * without backslash escapes and refused if either finds a forbidden form outside quotes. Comments are refused as
 * well: a quote inside a comment would otherwise make the two readings disagree on where strings are.
 */
const IDENT_CHAR = /[\p{L}\p{N}_$@#]/u;
const IDENT_START = /[\p{L}_]/u;

function scan(sql: string, backslashEscapes: boolean): string | undefined {
  const n = sql.length;
  let i = 0;
  /** Where the word sql[i] belongs to began (-1: not in a word); `a$b`, `xN` continue a word, `1$`, `$1` do not. */
  let wordStart = -1;
  const continuesIdentifier = (at: number) => wordStart >= 0 && wordStart < at && IDENT_START.test(sql[wordStart]);
  while (i < n) {
    const c = sql[i];
    if (IDENT_CHAR.test(c)) {
      if (wordStart < 0) wordStart = i;
    } else {
      wordStart = -1;
    }
    if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < n) {
        if (backslashEscapes && sql[j] === '\\') {
          j += 2;
          continue;
        }
        if (sql[j] === c) {
          if (sql[j + 1] === c) {
            j += 2; // a doubled quote stays inside
            continue;
          }
          break;
        }
        j++;
      }
      // An unterminated string is the engine parser's to report (a plain "Invalid input" error).
      if (j >= n) return undefined;
      i = j + 1;
      wordStart = -1;
      continue;
    }
    const next = sql[i + 1];
    if ((c === '-' && next === '-') || (c === '/' && next === '*')) return 'SQL comments are not supported';
    if (c === '$' && !continuesIdentifier(i)) {
      return "'$' outside a quoted string (a parameter placeholder or a dollar-quoted string) is not supported";
    }
    if (c === '?') return "'?' (a parameter placeholder) is not supported";
    if (c === ':') {
      if (next === ':') {
        i += 2; // a cast, `id::bigint`
        wordStart = -1;
        continue;
      }
      if (next !== undefined && IDENT_CHAR.test(next)) return "':name' (a parameter placeholder) is not supported";
    }
    if (/[NnBbRr]/.test(c) && (next === "'" || next === '"') && !continuesIdentifier(i)) {
      return `${c}${next}…${next} string literals are not supported; write a plain '…' string`;
    }
    i++;
  }
  return undefined;
}

/** Why the engine must not be given this SQL text, or undefined when it may. */
export function engineSqlProblem(sql: string): string | undefined {
  return scan(sql, true) ?? scan(sql, false);
}

/** Throws 400 (code 13) naming the field when `sql` holds a form the engine cannot take. */
export function assertEngineSql(sql: string | null | undefined, field: string): void {
  if (sql === undefined || sql === null) return;
  const problem = engineSqlProblem(sql);
  if (problem) throw Errors.invalidInput(`${field}: ${problem}`);
}
