// What the page knows, and the one rule that keeps it right while answers and
// events arrive in any order: a view replaces the one held only if its
// `version` is not lower (every change bumps it, so the highest is the newest).

// One list (volumes, addresses, …): rows in the order they were first seen,
// plus the cursor of the page loaded last (lists are in creation order, so
// "Load more" appends).
export class Collection {
  constructor() {
    this.rows = new Map(); // id -> view
    this.endCursor = null;
    this.hasNextPage = false;
  }

  // Keeps the newest of `view` and the row held; a DELETED view removes the
  // row (lists leave deleted resources out). Returns whether anything changed.
  merge(view) {
    const held = this.rows.get(view.id);
    if (held && held.version > view.version) return false;
    if (view.state === 'DELETED') return this.rows.delete(view.id);
    // A new row goes last, as its list would place it (it is the newest made).
    this.rows.set(view.id, view);
    return true;
  }

  remove(id) {
    return this.rows.delete(id);
  }

  has(id) {
    return this.rows.has(id);
  }

  get(id) {
    return this.rows.get(id);
  }

  list() {
    return [...this.rows.values()];
  }

  get size() {
    return this.rows.size;
  }

  // Merges one page of the list (the first, a "Load more", or a refetch).
  // Rows already held keep their place, so a row never shows twice.
  mergePage(connection) {
    for (const { node } of connection.edges) this.merge(node);
    this.endCursor = connection.pageInfo.endCursor ?? this.endCursor;
    this.hasNextPage = connection.pageInfo.hasNextPage;
  }
}

// The recent events, newest first, each once (by id). Events come from the
// history read at start, then from the subscription, which after a reconnect
// may replay some the page already has: those are dropped here.
export class EventLog {
  constructor(keep = 50) {
    this.keep = keep;
    this.seen = new Set();
    this.recent = [];
  }

  // Returns false for an event already seen.
  add(event) {
    if (this.seen.has(event.id)) return false;
    this.seen.add(event.id);
    this.recent.unshift(event);
    if (this.recent.length > this.keep) this.recent.length = this.keep;
    return true;
  }
}

// Everything the page shows for one signed-in tenant.
export function createState(tenantId) {
  return resetState({ tenantId });
}

// Empties the state in place (the forms hold on to the object itself): used
// when the server's feed is another one than the page started on.
export function resetState(state) {
  return Object.assign(state, {
    pools: [],
    quotas: new Map(), // `${poolId}/${resource}` -> quota (has a version)
    volumes: new Collection(),
    snapshots: new Collection(),
    addresses: new Collection(),
    networks: new Collection(),
    instances: new Collection(),
    filesystems: new Map(), // networkId -> filesystems of that network
    firewallRules: new Map(), // networkId -> firewall rules of that network, by name
    events: new EventLog(),
    // Every name seen, kept after its resource goes: the events of a deleted
    // resource still name it.
    names: new Map(),
  });
}

export function mergeQuotas(state, quotas) {
  for (const quota of quotas) {
    const key = `${quota.poolId}/${quota.resource}`;
    const held = state.quotas.get(key);
    if (!held || held.version <= quota.version) state.quotas.set(key, quota);
  }
}

// Which collection a view belongs to (every fragment asks for __typename).
const BY_TYPENAME = {
  ProviderVolume: 'volumes',
  ProviderSnapshot: 'snapshots',
  ProviderAddress: 'addresses',
  Network: 'networks',
  Instance: 'instances',
};

// A part of a network (a rule, a filesystem) a mutation answered, into the
// network's list `lists` holds: kept unless the list holds a newer view of it;
// a DELETED one leaves the list.
function mergePart(lists, part) {
  const held = lists.get(part.networkId) ?? [];
  const same = held.find((p) => p.id === part.id);
  if (same && same.version > part.version) return false;
  const others = held.filter((p) => p.id !== part.id);
  const next = part.state === 'DELETED' ? others : [...others, part];
  lists.set(part.networkId, next.sort((a, b) => a.name.localeCompare(b.name)));
  return true;
}

export function mergeNode(state, node) {
  if (node?.__typename === 'FirewallRule') return mergePart(state.firewallRules, node);
  if (node?.__typename === 'Filesystem') return mergePart(state.filesystems, node);
  const list = BY_TYPENAME[node?.__typename];
  if (list && node.name) state.names.set(node.id, node.name);
  return list ? state[list].merge(node) : false;
}

// A subject `nodes` no longer finds: it is gone, from whichever list held it.
export function forget(state, id) {
  const name = Object.values(BY_TYPENAME).map((list) => state[list].get(id)?.name).find(Boolean);
  if (name) state.names.set(id, name);
  return Object.values(BY_TYPENAME).some((list) => state[list].remove(id));
}
