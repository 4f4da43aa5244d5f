import { useEffect, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { bytes, num, when } from '../format';
import { Problem } from '../problem';

type Version = components['schemas']['TableVersion'];
type Tag = components['schemas']['TagContents'];
type Branch = components['schemas']['BranchContents'];

const VERSIONS_PAGE = 20;

/** The tags of a tags/list answer: `{tags}` for this client; the bare map (the official remote client's) also read. */
function tagMap(data: { tags: Record<string, Tag> } | Record<string, Tag>): Record<string, Tag> {
  const inner = (data as { tags?: unknown }).tags as { version?: unknown } | undefined;
  return (inner && typeof inner === 'object' && typeof inner.version !== 'number' ? inner : data) as Record<string, Tag>;
}
const REFS_PAGE = 100;

/** A table's versions (newest first, a page at a time), each with the tags naming it, then its tags and branches. */
export function TableVersions({ api, id }: { api: Api; id: string }) {
  const [versions, setVersions] = useState<Version[]>();
  const [next, setNext] = useState<string | undefined>();
  const [tags, setTags] = useState<Record<string, Tag>>();
  const [branches, setBranches] = useState<Record<string, Branch>>();
  const [error, setError] = useState('');

  const loadVersions = async (token?: string, live = () => true) => {
    const r = await api.POST('/v1/table/{id}/version/list', {
      params: { path: { id }, query: { descending: true, limit: VERSIONS_PAGE, page_token: token } },
    });
    if (!live()) return;
    if (r.error) return setError(problemText(r.error, r.response));
    setVersions((v) => (token ? [...(v ?? []), ...r.data.versions] : r.data.versions));
    setNext(r.data.page_token);
  };
  useEffect(() => {
    let alive = true;
    const live = () => alive;
    const fail = (err: unknown) => live() && setError(problemText(err));
    loadVersions(undefined, live).catch(fail);
    api
      .POST('/v1/table/{id}/tags/list', { params: { path: { id }, query: { limit: REFS_PAGE } } })
      .then((r) => live() && (r.error ? setError(problemText(r.error, r.response)) : setTags(tagMap(r.data))))
      .catch(fail);
    api
      .POST('/v1/table/{id}/branches/list', { params: { path: { id }, query: { limit: REFS_PAGE } } })
      .then((r) => live() && (r.error ? setError(problemText(r.error, r.response)) : setBranches(r.data.branches)))
      .catch(fail);
    return () => {
      alive = false;
    };
  }, [api, id]);

  // Tags on main, by the version they name (a branch's tags are listed with their branch below).
  const tagsOf = (v: number) =>
    Object.entries(tags ?? {})
      .filter(([, t]) => t.version === v && !t.branch)
      .map(([name]) => name);
  return (
    <section aria-labelledby="versions-title">
      <h3 id="versions-title">Versions</h3>
      <Problem text={error} />
      {versions && (
        <>
          <table class="grid" aria-label="Versions">
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Committed</th>
                <th scope="col">Tags</th>
                <th scope="col">Manifest</th>
              </tr>
            </thead>
            <tbody>
              {versions.map((v) => (
                <tr key={v.version}>
                  <td class="n">{v.version}</td>
                  <td>{when(v.timestamp)}</td>
                  <td>{tagsOf(v.version).join(', ')}</td>
                  <td class="n">{bytes(v.manifest_size)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {next && (
            <button type="button" onClick={() => void loadVersions(next)}>
              Older versions
            </button>
          )}
        </>
      )}
      <h3 id="tags-title">Tags</h3>
      {tags && Object.keys(tags).length === 0 && <p>No tags.</p>}
      {tags && Object.keys(tags).length > 0 && (
        <table class="grid" aria-label="Tags">
          <thead>
            <tr>
              <th scope="col">Tag</th>
              <th scope="col">Version</th>
              <th scope="col">Branch</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(tags).map(([name, t]) => (
              <tr key={name}>
                <td>{name}</td>
                <td class="n">{t.version}</td>
                <td>{t.branch ?? 'main'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3 id="branches-title">Branches</h3>
      {branches && Object.keys(branches).length === 0 && <p>No branches besides main.</p>}
      {branches && Object.keys(branches).length > 0 && (
        <table class="grid" aria-label="Branches">
          <thead>
            <tr>
              <th scope="col">Branch</th>
              <th scope="col">Forked from</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(branches).map(([name, b]) => (
              <tr key={name}>
                <td>{name}</td>
                <td>
                  {b.parentBranch ?? 'main'} version {num(b.parentVersion)}
                </td>
                <td>{b.createAt ? when(new Date(b.createAt * 1000).toISOString()) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
