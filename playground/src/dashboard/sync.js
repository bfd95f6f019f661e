// Loading the tenant's state, and keeping it current from the event feed.
//
// Start: read the feed to its end first (that cursor is where the live
// subscription starts), then the lists. Whatever changes after the cursor is
// replayed by the subscription, so nothing falls in between; an event for a
// change the lists already show only refetches a view of the same version.
//
// Live: an event names its subject; the subject is refetched with
// `nodes(ids:)` (event `data` is the service's internal view: lower-case
// enums, other field names) and merged by version. Volume and address events
// also refetch the quotas, since bookings publish no `quota.updated`.
import { gql } from './api.js';
import {
  EVENT_PAGE, EVENT_PAGE_QUERY, LISTS, NODES, PAGE_SIZE, POOLS_AND_QUOTAS, QUOTAS, listPageQuery, networkPartsQuery,
} from './queries.js';
import { forget, mergeNode, mergeQuotas } from './store.js';

// Events arriving together (a create, its ready) are refetched in one request.
const BATCH_MS = 100;
const RETRY_MS = 2000;
// `nodes` takes at most 100 ids; the server allows 30 aliases per operation,
// and each network takes two (its filesystems and its firewall rules).
const MAX_NODES = 100;
const MAX_NETWORKS = 12;

export function createSync({ token, state, changed }) {
  const tenantId = state.tenantId;
  const query = (doc, variables = {}) => gql(token, doc, { tenantId, ...variables });

  // Subjects to refetch at the next flush.
  const due = { ids: new Set(), quotas: false, pools: false, parts: new Set() };
  let timer = null;
  let flushing = Promise.resolve();

  // Reads the whole feed of the tenant to find its end, keeping the last
  // events for the list. The API has no "latest" page, so a long history
  // takes several pages (1000 events each).
  async function readFeedHead() {
    let after = null;
    let recent = [];
    for (;;) {
      const { events } = await query(EVENT_PAGE_QUERY, { after, first: EVENT_PAGE });
      recent = recent.concat(events.edges.map((e) => e.node)).slice(-state.events.keep);
      after = events.pageInfo.endCursor;
      if (!events.pageInfo.hasNextPage) break;
    }
    for (const event of recent) state.events.add(event); // oldest first: the log keeps newest first
    return after;
  }

  async function loadPoolsAndQuotas() {
    const data = await query(POOLS_AND_QUOTAS);
    state.pools = data.pools;
    mergeQuotas(state, data.quotas);
  }

  async function loadPage(list, after) {
    const { page } = await query(listPageQuery(list), { first: PAGE_SIZE, after });
    state[list].mergePage(page);
    return page;
  }

  // Filesystems and firewall rules of the given networks (all held ones by
  // default), in batches.
  async function loadNetworkParts(networkIds = [...state.networks.rows.keys()]) {
    for (let i = 0; i < networkIds.length; i += MAX_NETWORKS) {
      const batch = networkIds.slice(i, i + MAX_NETWORKS);
      const vars = Object.fromEntries(batch.map((id, n) => [`n${n}`, id]));
      const data = await query(networkPartsQuery(batch), vars);
      batch.forEach((id, n) => {
        state.filesystems.set(id, data[`f${n}`]);
        state.firewallRules.set(id, data[`r${n}`]);
      });
    }
  }

  // The first page of every list, the pools and quotas, and the networks' parts.
  async function loadAll() {
    await Promise.all([loadPoolsAndQuotas(), ...LISTS.map((list) => loadPage(list, null))]);
    await loadNetworkParts();
    changed();
  }

  async function loadMore(list) {
    const page = await loadPage(list, state[list].endCursor);
    if (list === 'networks') await loadNetworkParts(page.edges.map((e) => e.node.id));
    changed();
  }

  // After a reconnect: read again as many pages of each list as are shown.
  // Rows only merge (by version); deletions arrive as replayed events.
  async function refetchVisible() {
    const refetchList = async (list) => {
      const shown = state[list].size;
      let after = null;
      let read = 0;
      do {
        const page = await loadPage(list, after);
        read += page.edges.length;
        after = page.pageInfo.endCursor;
        if (!page.pageInfo.hasNextPage) break;
      } while (read < shown);
    };
    await Promise.all([loadPoolsAndQuotas(), ...LISTS.map(refetchList)]);
    await loadNetworkParts();
    changed();
  }

  // What an event makes stale.
  function onEvent(event) {
    const { type, subject, data } = event;
    if (type.startsWith('providerVolume.snapshot.')) {
      // The volume's `snapshots` list changes too, without a volume event.
      due.ids.add(subject);
      if (data?.volumeId) due.ids.add(data.volumeId);
    } else if (type.startsWith('providerVolume.') || type.startsWith('providerAddress.')) {
      due.ids.add(subject);
      due.quotas = true;
    } else if (type.startsWith('network.filesystem.') || type.startsWith('network.firewallRule.')) {
      // The subject is the network; `version` is the filesystem's or the rule's.
      due.parts.add(data?.networkId ?? subject);
    } else if (type.startsWith('network.') || type.startsWith('instance.')) {
      due.ids.add(subject);
    } else if (type.startsWith('quota.') || type.startsWith('pool.')) {
      due.quotas = true;
      due.pools = true;
    }
    schedule(BATCH_MS);
  }

  function schedule(ms) {
    if (timer) return;
    timer = setTimeout(() => {
      timer = null;
      // One flush at a time; a flush that fails puts its work back.
      flushing = flushing.then(flush);
    }, ms);
  }

  async function flush() {
    const ids = [...due.ids].slice(0, MAX_NODES);
    const { quotas, pools } = due;
    const parts = [...due.parts];
    ids.forEach((id) => due.ids.delete(id));
    due.quotas = due.pools = false;
    due.parts.clear();
    try {
      if (ids.length) {
        const { nodes } = await gql(token, NODES, { ids });
        nodes.forEach((node, i) => (node ? mergeNode(state, node) : forget(state, ids[i])));
      }
      if (pools) await loadPoolsAndQuotas();
      else if (quotas) mergeQuotas(state, (await query(QUOTAS)).quotas);
      // A new network (or a change of its filesystems or rules) needs them read.
      const newNetworks = ids.filter((id) => state.networks.has(id) && !state.filesystems.has(id));
      if (parts.length || newNetworks.length) {
        await loadNetworkParts([...new Set([...parts, ...newNetworks])].filter((id) => state.networks.has(id)));
      }
      changed();
    } catch {
      // Offline or a passing failure: try again shortly. (A reconnect also
      // refetches every shown list.)
      ids.forEach((id) => due.ids.add(id));
      due.quotas ||= quotas;
      due.pools ||= pools;
      parts.forEach((id) => due.parts.add(id));
      schedule(RETRY_MS);
      return;
    }
    if (due.ids.size) schedule(0);
  }

  return { readFeedHead, loadAll, loadMore, refetchVisible, onEvent };
}
