/** The footer of a paged list: how many rows are shown of how many, and a button for the next page. */
import type { Paged } from './paged.js';

/** "Showing 200 of 450" and "Load more" while the API has a next page. */
export function MoreRows({ list, noun }: { list: Paged<unknown>; noun: string }) {
  if (list.rows.length === 0) return null;
  return (
    <div class="row more-rows">
      <span class="hint" role="status">Showing {list.rows.length}{list.count !== null ? ` of ${list.count}` : ''} {noun}</span>
      {list.hasMore && <button type="button" class="chip" onClick={() => list.more()} disabled={list.loading}>{list.loading ? 'Loading…' : 'Load more'}</button>}
    </div>
  );
}
