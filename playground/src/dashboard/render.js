// Draws the state into the page: pools with quota bars, the tables, the event
// list. Everything here is a pure function of the state, redrawn on change
// (lists are a page or a few long, so redrawing is cheaper than diffing).
import { $, badge, copyButton, formatTime, h, replaceKeepingFocus } from './dom.js';

const dash = () => h('span', { class: 'muted' }, '—');

// A row: `data-id` for the test and for focus keys, the resource's message as
// a tooltip on its badge.
function row(view, cells) {
  return h('tr', { dataset: { id: view.id, version: view.version } }, cells.map((cell) => h('td', {}, cell)));
}

function stateCell(view) {
  return [badge(view.state, view.message ?? undefined), view.message ? h('div', { class: 'message' }, view.message) : null];
}

function empty(columns, text) {
  return h('tr', { class: 'empty' }, h('td', { colspan: columns }, text));
}

function manageButton(kind, view) {
  return h('button', {
    type: 'button',
    class: 'small secondary',
    'aria-label': `Manage ${kind} ${view.name}`,
    dataset: { key: `manage:${view.id}`, manage: kind, id: view.id },
  }, 'Manage');
}

export function renderPools(state) {
  const cards = state.pools.map((pool) => {
    const quotas = [...state.quotas.values()].filter((q) => q.poolId === pool.id);
    return h('article', { class: 'pool card', dataset: { id: pool.id } },
      h('h3', {}, pool.name, ' ', h('span', { class: 'muted' }, `${pool.providerKind} · ${pool.billing}`)),
      h('p', { class: 'regions' }, 'Regions: ', pool.regions.join(', ') || '—'),
      h('p', { class: 'machines' }, 'Machines: ', pool.sizes.join(', ') || 'any size',
        ' · ', pool.images.join(', ') || 'any image'),
      quotas.length
        ? h('ul', { class: 'quotas' }, quotas.map(quotaBar))
        : h('p', { class: 'muted' }, 'No quotas on this pool.'));
  });
  replaceKeepingFocus($('#pools'), cards.length ? cards : [h('p', { class: 'muted' }, 'No pools are offered to this tenant.')]);
}

function quotaBar(quota) {
  const pct = quota.max > 0 ? Math.min(100, (quota.used / quota.max) * 100) : 100;
  const level = pct >= 90 ? 'high' : pct >= 70 ? 'mid' : 'low';
  const text = `${quota.used} of ${quota.max}`;
  return h('li', { class: 'quota', dataset: { resource: quota.resource } },
    h('span', { class: 'quota-label' }, quota.resource),
    h('span', {
      class: `bar bar-${level}`,
      role: 'meter',
      'aria-label': `${quota.resource} used`,
      'aria-valuemin': 0,
      'aria-valuemax': quota.max,
      'aria-valuenow': quota.used,
      'aria-valuetext': text,
    }, h('span', { class: 'fill', style: `width: ${pct}%` })),
    h('span', { class: 'quota-text' }, text));
}

// An attachment or assignment on its way off says so in its own words.
const GOING = { attachment: 'DETACHING', assignment: 'UNASSIGNING' };

function attachmentsCell(state, volume) {
  if (!volume.attachments.length) return dash();
  return h('ul', { class: 'plain' }, volume.attachments.map((a) => h('li', {},
    a.instance?.name ?? state.instances.get(a.instanceId)?.name ?? a.instanceId, ' ',
    badge(a.state === 'DELETING' ? GOING.attachment : a.state, a.message ?? undefined),
    // A failed attachment says why.
    a.message ? h('div', { class: 'message' }, a.message) : null)));
}

export function renderVolumes(state) {
  const rows = state.volumes.list().map((v) => row(v, [
    h('span', { class: 'name' }, v.name),
    stateCell(v),
    h('span', { class: 'num' }, `${v.sizeGiB} GiB`,
      v.observedSizeGiB != null && v.observedSizeGiB !== v.sizeGiB ? h('span', { class: 'muted' }, ` (${v.observedSizeGiB} now)`) : null),
    v.kind,
    v.region,
    attachmentsCell(state, v),
    v.mount ? h('code', { class: 'device' }, `${v.mount.type} ${v.mount.source}`)
      : v.device ? h('code', { class: 'device' }, v.device) : dash(),
    h('span', { class: 'num' }, String(v.snapshots.length)),
    manageButton('volume', v),
  ]));
  replaceKeepingFocus($('#volumes-rows'), rows.length ? rows : [empty(9, 'No volumes yet: create one above.')]);
}

export function renderSnapshots(state) {
  const rows = state.snapshots.list().map((s) => row(s, [
    h('span', { class: 'name' }, s.name),
    stateCell(s),
    state.volumes.get(s.volumeId)?.name ?? h('code', {}, s.volumeId),
    s.volumeKind,
    s.region,
    h('span', { class: 'num' }, s.sizeGiB == null ? '—' : String(s.sizeGiB)),
    h('span', { class: 'num' }, String(s.minDiskSizeGiB)),
    manageButton('snapshot', s),
  ]));
  replaceKeepingFocus($('#snapshots-rows'), rows.length ? rows : [empty(8, 'No snapshots: take one from a volume’s Manage panel.')]);
}

function assignmentCell(state, a) {
  if (a.assignmentState === 'NONE' && !a.instanceId) return h('span', { class: 'muted' }, 'not assigned');
  const name = a.instance?.name ?? state.instances.get(a.instanceId)?.name ?? a.instanceId;
  const shown = a.assignmentState === 'DELETING' ? GOING.assignment : a.assignmentState;
  return [badge(shown, a.assignmentMessage ?? undefined), ' ', name ?? '',
    a.assignmentMessage ? h('div', { class: 'message' }, a.assignmentMessage) : null];
}

export function renderAddresses(state) {
  const rows = state.addresses.list().map((a) => row(a, [
    h('span', { class: 'name' }, a.name),
    [stateCell(a), a.lost ? h('div', { class: 'message' }, 'released outside vps-graph: delete it') : null],
    a.address ? h('code', {}, a.address) : dash(),
    a.family,
    a.region,
    assignmentCell(state, a),
    manageButton('address', a),
  ]));
  replaceKeepingFocus($('#addresses-rows'), rows.length ? rows : [empty(7, 'No addresses yet: reserve one above.')]);
}

// How a machine mounts a filesystem (schema: `mount -t <fstype> -o <options>
// <source> <path>`), at /mnt/<name> as an example path.
function filesystemItem(fs) {
  const path = `/mnt/${fs.name}`;
  const lines = fs.mount
    ? [`mount -t ${fs.mount.fstype} -o ${fs.mount.options} ${fs.mount.source} ${path}`,
      `${fs.mount.source} ${path} ${fs.mount.fstype} ${fs.mount.options} 0 0`]
    : null;
  const pre = lines ? h('pre', { class: 'mount-line', tabindex: 0 }, lines.join('\n')) : null;
  return h('li', { dataset: { id: fs.id } },
    h('span', { class: 'name' }, fs.name), ' ', h('span', { class: 'muted' }, fs.kind), ' ', badge(fs.state, fs.message ?? undefined),
    pre, pre ? copyButton(pre, `the mount lines of ${fs.name}`, `copy:${fs.id}`) : null);
}

// A rule in words: "inbound tcp 22 from 203.0.113.7/32 · web".
export function ruleSummary(state, rule) {
  const ports = rule.protocol === 'ICMP' ? ''
    : rule.fromPort == null ? ' all ports'
      : rule.toPort != null && rule.toPort !== rule.fromPort ? ` ${rule.fromPort}-${rule.toPort}` : ` ${rule.fromPort}`;
  const name = (id) => state.instances.get(id)?.name ?? id;
  const peers = [...rule.peers.addresses, ...rule.peers.instanceIds.map(name)].join(', ');
  const way = rule.direction === 'INBOUND' ? 'from' : 'to';
  const on = rule.appliesTo.length ? rule.appliesTo.map(name).join(', ') : 'every instance';
  return `${rule.direction.toLowerCase()} ${rule.protocol.toLowerCase()}${ports} ${way} ${peers} · ${on}`;
}

// A rule's list item, with an action button (the Manage panel's Delete) if given.
export function ruleItem(state, rule, action = null) {
  return h('li', { dataset: { id: rule.id } },
    h('span', { class: 'name' }, rule.name), ' ', badge(rule.state, rule.message ?? undefined), ' ', action,
    h('div', { class: 'muted rule-summary' }, ruleSummary(state, rule)),
    rule.message ? h('div', { class: 'message' }, rule.message) : null);
}

export function renderNetworks(state) {
  const rows = state.networks.list().map((n) => {
    const filesystems = state.filesystems.get(n.id) ?? [];
    const rules = state.firewallRules.get(n.id) ?? [];
    return row(n, [
      h('span', { class: 'name' }, n.name),
      stateCell(n),
      [n.region ?? '', n.ipRange ? h('div', {}, h('code', {}, n.ipRange)) : null],
      n.subnets.length
        ? h('ul', { class: 'plain' }, n.subnets.map((s) => h('li', {},
          h('code', {}, s.ipRange), ' ', s.zone ?? s.region, ' ', badge(s.state))))
        : dash(),
      filesystems.length ? h('ul', { class: 'plain filesystems' }, filesystems.map(filesystemItem)) : dash(),
      rules.length ? h('ul', { class: 'plain rules' }, rules.map((r) => ruleItem(state, r))) : dash(),
      manageButton('network', n),
    ]);
  });
  replaceKeepingFocus($('#networks-rows'), rows.length ? rows : [empty(7, 'No networks: create one above.')]);
}

export function renderInstances(state) {
  const rows = state.instances.list().map((i) => row(i, [
    h('span', { class: 'name' }, i.name),
    stateCell(i),
    [i.region, i.zone ? h('span', { class: 'muted' }, ` ${i.zone}`) : null],
    h('code', {}, i.size),
    h('code', {}, i.image),
    i.networkId ? [state.networks.get(i.networkId)?.name ?? h('code', {}, i.networkId),
      i.filesystems.length ? h('span', { class: 'muted' }, ` · mounts at ${i.filesystems.map((m) => m.path).join(', ')}`) : null] : dash(),
    manageButton('instance', i),
  ]));
  replaceKeepingFocus($('#instances-rows'), rows.length ? rows : [empty(7, 'No instances: create one above.')]);
}

// What an event is about, by name when the page has seen it (gone or not).
function subjectName(state, id) {
  for (const list of [state.volumes, state.snapshots, state.addresses, state.networks, state.instances]) {
    const held = list.get(id);
    if (held) return held.name;
  }
  return state.names.get(id) ?? null;
}

export function renderEvents(state) {
  const items = state.events.recent.map((e) => h('li', { dataset: { id: e.id, cursor: e.cursor } },
    // <wbr> after each dot: long types wrap between their parts, not mid-word.
    h('span', { class: 'event-type' }, e.type.split('.').flatMap((part, i) => (i ? [h('wbr'), `.${part}`] : [part]))),
    h('span', { class: 'event-meta' }, h('time', { datetime: e.time }, formatTime(e.time)), ` v${e.version}`),
    subjectName(state, e.subject) ? h('span', { class: 'event-name' }, subjectName(state, e.subject)) : null,
    h('code', { class: 'event-subject' }, e.subject)));
  replaceKeepingFocus($('#events-list'), items.length ? items : [h('li', { class: 'muted' }, 'No events yet.')]);
}

// "N shown" and the Load more button of each list.
export function renderFooters(state) {
  for (const footer of document.querySelectorAll('.list-footer')) {
    const list = state[footer.dataset.list];
    footer.querySelector('.count').textContent = `${list.size} shown${list.hasNextPage ? ', more to load' : ''}`;
    footer.querySelector('.more').hidden = !list.hasNextPage;
  }
}

// Refills a <select>, keeping what the user picked when it is still offered.
export function fillSelect(select, options, placeholder) {
  const kept = select.value;
  const items = options.map(([value, label]) => h('option', { value }, label));
  if (placeholder !== undefined) items.unshift(h('option', { value: '' }, placeholder));
  select.replaceChildren(...items);
  if (options.some(([value]) => value === kept)) select.value = kept;
}

export function renderAll(state) {
  renderPools(state);
  renderVolumes(state);
  renderSnapshots(state);
  renderAddresses(state);
  renderNetworks(state);
  renderInstances(state);
  renderEvents(state);
  renderFooters(state);
}
