import { useState } from 'preact/hooks';

/** Server-side pages addressed by a `page_token`: the token of the page shown, and the tokens of the pages before it. */
export function usePages() {
  const [token, setToken] = useState<string | undefined>(undefined);
  const [history, setHistory] = useState<(string | undefined)[]>([]);
  return {
    token,
    first: () => {
      setToken(undefined);
      setHistory([]);
    },
    previous: history.length > 0 ? () => (setToken(history[history.length - 1]), setHistory(history.slice(0, -1))) : undefined,
    next: (next: string | undefined) => (next ? () => (setHistory([...history, token]), setToken(next)) : undefined),
  };
}

/** Previous / Next buttons of a paged list (disabled at either end). */
export function Pager({ pages, next, label }: { pages: ReturnType<typeof usePages>; next?: string; label: string }) {
  const onNext = pages.next(next);
  return (
    <div class="pager" role="group" aria-label={`${label} pages`}>
      <button type="button" disabled={!pages.previous} onClick={pages.previous}>
        Previous page
      </button>
      <button type="button" disabled={!onNext} onClick={onNext}>
        Next page
      </button>
    </div>
  );
}
