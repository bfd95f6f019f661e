// The action forms: create a volume or an address, and the Manage panels that
// attach, detach, resize, snapshot and delete a volume, show a shared volume's
// mount lines, and assign, unassign and delete an address.
import { ApiError, dryRun, gql, newIdempotencyKey } from './api.js';
import { $, copyButton, h, replaceKeepingFocus } from './dom.js';
import { MOUNT_LINES, MUTATIONS } from './queries.js';
import { fillSelect, ruleItem } from './render.js';

// Makes `form` submit through `action(values, idempotencyKey)`. While it runs
// the submit button is disabled (no double submit); a refusal shows as
// `CODE: message` in the form's .form-error and leaves every value as typed.
// When the answer was lost (network, INTERNAL, TIMEOUT) the same values sent
// again reuse the same idempotency key, so a retry cannot make a second volume.
// Ids in a refusal's words, written as the names the page shows (set once signed in).
let withNames = (text) => text;

export function nameIdsWith(state) {
  const lists = () => [state.volumes, state.snapshots, state.addresses, state.networks, state.instances];
  withNames = (text) => text.replace(/\b(?:pool|pvol|psnap|paddr|net|inst)_[0-9a-z]{26,52}\b/g, (id) => {
    const name = state.pools.find((p) => p.id === id)?.name ?? lists().map((l) => l.get(id)?.name).find(Boolean);
    return name ? `“${name}”` : id;
  });
}

export function wireForm(form, action, { context = () => ({}), done = 'Sent: the list shows it as it goes.' } = {}) {
  const button = form.querySelector('button[type="submit"]');
  const errorBox = form.querySelector('.form-error');
  let lost = null; // { fingerprint, key } of a submit whose answer never came

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (form.getAttribute('aria-busy') === 'true') return;
    const values = { ...Object.fromEntries(new FormData(form)), ...context() };
    const fingerprint = JSON.stringify(values);
    const key = lost?.fingerprint === fingerprint ? lost.key : newIdempotencyKey();
    // A disabled button drops keyboard focus; it is given back afterwards.
    const hadFocus = form.contains(document.activeElement);
    form.setAttribute('aria-busy', 'true');
    button.disabled = true;
    clearError(form);
    try {
      await action(values, key);
      lost = null;
      resetFields(form);
      if (done) sayDone(form, done);
    } catch (err) {
      const error = err instanceof ApiError ? err : new ApiError('ERROR', String(err?.message ?? err));
      lost = error.uncertain ? { fingerprint, key } : null;
      errorBox.textContent = withNames(error.toString());
      errorBox.hidden = false;
      if (error.code === 'NETWORK') errorBox.dataset.offline = 'true';
    } finally {
      form.removeAttribute('aria-busy');
      button.disabled = false;
      if (hadFocus && document.activeElement === document.body) button.focus();
    }
  });
}

// Once the page is connected again, "could not reach the server" is no longer
// true: say what is (a retry reuses the idempotency key, so it cannot make two).
export function sayReconnected() {
  for (const box of document.querySelectorAll('.form-error[data-offline]')) {
    delete box.dataset.offline;
    box.textContent = 'The connection is back; that submit may not have arrived: submit again (it will not be made twice).';
  }
}

export function clearError(form) {
  const box = form.querySelector('.form-error');
  delete box.dataset.offline;
  box.textContent = '';
  box.classList.remove('form-done');
  box.hidden = true;
}

// A success says so for a moment, in the place a refusal would take.
const DONE_MS = 4000;

function sayDone(form, text) {
  const box = form.querySelector('.form-error');
  box.textContent = text;
  box.classList.add('form-done');
  box.hidden = false;
  setTimeout(() => { if (box.classList.contains('form-done')) clearError(form); }, DONE_MS);
}

// After a success, the fields named in data-reset go back to their defaults
// (a new name is wanted next time; the pool and region picked stay).
function resetFields(form) {
  for (const name of (form.dataset.reset ?? '').split(/\s+/).filter(Boolean)) {
    const field = form.elements[name];
    if (!field) continue;
    if (field.type === 'checkbox') field.checked = field.defaultChecked;
    else field.value = field.defaultValue;
  }
}

// What a create would cost a month, shown under its form before the user clicks:
// the form's values are sent as a dry run (nothing is made) a moment after each
// change, and its plan's monthly cost (or the refusal it would meet) is shown.
const PRICE_WAIT_MS = 250;

function showPrice(ctx, form, input) {
  const line = form.querySelector('.price');
  let timer = null;
  let asked = 0;
  const update = async () => {
    const values = Object.fromEntries(new FormData(form));
    if (!values.poolId || !values.region || !(Number(values.size) > 0)) { line.textContent = ''; return; }
    const mine = ++asked;
    let text;
    try {
      const plan = await dryRun(ctx.token, MUTATIONS.volumeCreate, input(values));
      const cost = plan?.monthlyCost;
      text = cost ? `Monthly price: ${cost.amount.toFixed(2)} ${cost.currency} (730 hours)` : 'No price: the pool has no rate card';
    } catch (err) {
      text = `Would be refused: ${err}`;
    }
    if (mine === asked) line.textContent = text;
  };
  const later = () => { clearTimeout(timer); timer = setTimeout(update, PRICE_WAIT_MS); };
  form.addEventListener('input', later);
  form.addEventListener('change', later);
  ctx.priceRefresh = later;
}

// The pool and region pickers of a create form: regions follow the pool.
function fillPoolPickers(state, form) {
  fillSelect(form.elements.poolId, state.pools.map((p) => [p.id, p.name]));
  const pool = state.pools.find((p) => p.id === form.elements.poolId.value);
  fillSelect(form.elements.region, (pool?.regions ?? []).map((r) => [r, r]));
}

// Networks a shared volume may go on: the pool's, with a subnet in the region.
function fillNetworks(state, form) {
  const { poolId, region, networkId, kind } = form.elements;
  const networks = state.networks.list().filter((n) => n.poolId === poolId.value
    && n.state !== 'DELETING' && n.subnets.some((s) => s.region === region.value));
  fillSelect(networkId, networks.map((n) => [n.id, n.name]), kind.value === 'SHARED' ? 'Choose a network' : 'None');
  networkId.disabled = kind.value !== 'SHARED';
  networkId.required = kind.value === 'SHARED';
  // DigitalOcean's smallest share is 50 GiB.
  form.elements.size.min = kind.value === 'SHARED' ? 50 : 1;
  if (kind.value === 'SHARED' && Number(form.elements.size.value) < 50) form.elements.size.value = 50;
}

// The instances a volume or address could go on: its pool's, in its region, not
// being deleted; for a shared volume those on its network; not one it is on.
function instanceOptions(state, { poolId, region, networkId, kind, attachments = [], instanceId, assignmentState }) {
  const on = new Set(attachments.filter((a) => a.state !== 'DELETING').map((a) => a.instanceId));
  if (instanceId && assignmentState !== 'DELETING') on.add(instanceId); // an address's instance
  return state.instances.list()
    .filter((i) => i.poolId === poolId && i.region === region && i.state !== 'DELETING' && !on.has(i.id))
    .filter((i) => kind !== 'SHARED' || i.networkId === networkId)
    .map((i) => [i.id, `${i.name} (${i.state})`]);
}

// A Manage panel follows one resource: `open(id)` shows it, `refresh()` redraws
// its summary and pickers from the state (never its inputs, which the user may
// be typing in), and it closes itself once the resource is gone.
function managePanel(panel, collection, { describe, onOpen, onRefresh }) {
  let id = null;
  const forms = [...panel.querySelectorAll('form')];
  const close = () => {
    const hadFocus = panel.contains(document.activeElement);
    id = null;
    panel.hidden = true;
    // Focus would fall to <body>: put it on the section's heading instead.
    if (hadFocus) {
      const heading = panel.parentElement.closest('section').querySelector('h2');
      heading.tabIndex = -1;
      heading.focus();
    }
  };
  panel.querySelector('.close').addEventListener('click', close);
  let seenVersion = null;
  const refresh = () => {
    if (!id) return;
    const view = collection().get(id);
    if (!view) return close();
    // A refusal is about the resource as it was: once it changes, the words go.
    if (seenVersion !== null && view.version !== seenVersion) forms.forEach(clearError);
    seenVersion = view.version;
    panel.querySelector('.subject-name').textContent = view.name;
    panel.querySelector('.summary').textContent = describe(view);
    onRefresh(view);
  };
  return {
    get id() { return id; },
    open(newId) {
      const view = collection().get(newId);
      if (!view) return;
      if (newId !== id) {
        for (const form of forms) { form.reset(); clearError(form); }
        seenVersion = null;
        onOpen(view);
      }
      id = newId;
      panel.hidden = false;
      refresh();
      const title = panel.querySelector('h3');
      title.tabIndex = -1;
      title.focus();
      panel.scrollIntoView({ block: 'nearest' });
    },
    refresh,
  };
}

// Wires every form. `ctx` = { token, state, merge(view), changed() }.
// Returns refresh(), to be called after every change of the state.
export function setUpForms(ctx) {
  const { state } = ctx;
  nameIdsWith(state);
  const tenantId = state.tenantId;
  const run = async (name, input) => (await gql(ctx.token, MUTATIONS[name], { input })).result;
  const mergeAnd = (view) => { ctx.merge(view); ctx.changed(); };

  // Create a volume.
  const volumeCreate = $('#volume-create');
  for (const field of ['poolId', 'region', 'kind']) {
    volumeCreate.elements[field].addEventListener('change', () => {
      if (field === 'poolId') fillPoolPickers(state, volumeCreate);
      fillNetworks(state, volumeCreate);
    });
  }
  const createInput = (v, key) => {
    const input = { tenantId, poolId: v.poolId, region: v.region, name: v.name.trim(), sizeGiB: Number(v.size),
      kind: v.kind, idempotencyKey: key };
    // A block volume takes no network (the server refuses one).
    if (v.kind === 'SHARED' && v.networkId) input.networkId = v.networkId;
    return input;
  };
  wireForm(volumeCreate, async (v, key) => mergeAnd(await run('volumeCreate', createInput(v, key))));
  showPrice(ctx, volumeCreate, (v) => createInput({ ...v, name: v.name.trim() || 'price-preview' }, newIdempotencyKey()));

  // Manage a volume.
  const volume = managePanel($('#volume-manage'), () => state.volumes, {
    describe: (v) => `${v.state} · ${v.kind.toLowerCase()} · ${v.sizeGiB} GiB · ${v.region}`
      + (v.attachments.length ? ` · on ${v.attachments.map((a) => a.instance?.name ?? a.instanceId).join(', ')}` : ''),
    onOpen: (v) => {
      $('#vr-size').value = v.sizeGiB;
      $('#vm-path').value = `/mnt/${v.name}`;
      $('#volume-mount .mount-output').hidden = true;
    },
    onRefresh: (v) => {
      fillSelect($('#va-instance'), instanceOptions(state, v), 'Choose an instance');
      const attached = v.attachments.filter((a) => a.state !== 'DELETING');
      fillSelect($('#vd-instance'), attached.map((a) => [a.instanceId, a.instance?.name ?? a.instanceId]),
        attached.length ? undefined : 'Not attached');
      $('#volume-detach button[type="submit"]').disabled = !attached.length;
      $('#volume-mount').hidden = v.kind !== 'SHARED';
    },
  });
  const volumeInput = () => ({ tenantId, volumeId: volume.id });
  const onVolume = { context: () => ({ volumeId: volume.id }) };
  wireForm($('#volume-attach'), async (v) => mergeAnd(await run('volumeAttach', { ...volumeInput(), instanceId: v.instanceId })), onVolume);
  wireForm($('#volume-detach'), async (v) => mergeAnd(await run('volumeDetach', { ...volumeInput(), instanceId: v.instanceId })), onVolume);
  wireForm($('#volume-resize'), async (v) => mergeAnd(await run('volumeResize', { ...volumeInput(), sizeGiB: Number(v.size) })), onVolume);
  wireForm($('#volume-snapshot'), async (v, key) => {
    mergeAnd(await run('volumeSnapshot', { ...volumeInput(), name: v.name.trim(), idempotencyKey: key }));
  }, onVolume);
  wireForm($('#volume-delete'), async () => mergeAnd(await run('volumeDelete', volumeInput())), onVolume);
  setUpMountLines(ctx, volume);

  // Create an address.
  const addressCreate = $('#address-create');
  addressCreate.elements.poolId.addEventListener('change', () => fillPoolPickers(state, addressCreate));
  wireForm(addressCreate, async (v, key) => {
    mergeAnd(await run('addressCreate', { tenantId, poolId: v.poolId, region: v.region, name: v.name.trim(),
      family: v.family, idempotencyKey: key }));
  });

  // Manage an address.
  const address = managePanel($('#address-manage'), () => state.addresses, {
    describe: (a) => `${a.state} · ${a.address ?? 'no address yet'} · ${a.region} · `
      + ({ NONE: 'not assigned', DELETING: 'unassigning' }[a.assignmentState] ?? `assignment ${a.assignmentState.toLowerCase()}`)
      + (a.instanceId ? ` ${a.assignmentState === 'DELETING' ? 'from' : 'on'} ${a.instance?.name ?? a.instanceId}` : ''),
    onOpen: () => {},
    onRefresh: (a) => fillSelect($('#aa-instance'), instanceOptions(state, a), 'Choose an instance'),
  });
  const addressInput = () => ({ tenantId, addressId: address.id });
  const onAddress = { context: () => ({ addressId: address.id }) };
  wireForm($('#address-assign'), async (v) => mergeAnd(await run('addressAssign', { ...addressInput(), instanceId: v.instanceId })), onAddress);
  wireForm($('#address-unassign'), async () => mergeAnd(await run('addressUnassign', addressInput())), onAddress);
  wireForm($('#address-delete'), async () => mergeAnd(await run('addressDelete', addressInput())), onAddress);

  const network = setUpNetworkPanel(ctx, run, mergeAnd);
  const snapshot = setUpSnapshotPanel(ctx, run, mergeAnd);
  const instance = setUpInstances(ctx, run, mergeAnd);
  const networkCreate = setUpNetworkCreate(ctx, run, mergeAnd);

  // The Manage buttons live in redrawn rows: one listener per table body.
  const panels = [['#volumes-rows', volume], ['#addresses-rows', address], ['#networks-rows', network],
    ['#snapshots-rows', snapshot], ['#instances-rows', instance.panel]];
  for (const [tbody, panel] of panels) {
    $(tbody).addEventListener('click', (event) => {
      const button = event.target.closest('button[data-manage]');
      if (button) panel.open(button.dataset.id);
    });
  }

  return function refresh() {
    fillPoolPickers(state, volumeCreate);
    fillNetworks(state, volumeCreate);
    // The first price, once the pickers have a pool; later ones follow the user's changes.
    if (!volumeCreate.querySelector('.price').textContent) ctx.priceRefresh?.();
    fillPoolPickers(state, addressCreate);
    volume.refresh();
    address.refresh();
    network.refresh();
    snapshot.refresh();
    instance.refresh();
    networkCreate.refresh();
  };
}

// Where a pool makes things: its regions (DigitalOcean) or its zones (AWS), as
// [value, label] options; a value says which: `region:nyc3`, `zone:us-east-1a`.
function placesOf(pool) {
  if (!pool) return [];
  return pool.providerKind === 'AWS'
    ? pool.zones.map((z) => [`zone:${z}`, z])
    : pool.regions.map((r) => [`region:${r}`, r]);
}

// `region:nyc3` -> { region: 'nyc3' }; `zone:us-east-1a` -> { zone: 'us-east-1a' }.
function place(value) {
  const [kind, name] = value.split(':');
  return kind === 'zone' ? { zone: name } : { region: name };
}

function poolOf(state, form) {
  return state.pools.find((p) => p.id === form.elements.poolId.value);
}

// Create a network: its pool's places; an AWS one takes its VPC's range too.
function setUpNetworkCreate(ctx, run, mergeAnd) {
  const { state } = ctx;
  const form = $('#network-create');
  const refresh = () => {
    fillSelect(form.elements.poolId, state.pools.map((p) => [p.id, p.name]));
    const pool = poolOf(state, form);
    fillSelect(form.elements.place, placesOf(pool));
    form.querySelector('[data-aws-only]').hidden = pool?.providerKind !== 'AWS';
  };
  form.elements.poolId.addEventListener('change', refresh);
  wireForm(form, async (v, key) => {
    const aws = poolOf(state, form)?.providerKind === 'AWS';
    const input = { tenantId: state.tenantId, poolId: v.poolId, name: v.name.trim(),
      subnets: [{ ...place(v.place), ipRange: v.ipRange.trim() }], idempotencyKey: key };
    if (aws) input.ipRange = v.vpcRange.trim();
    mergeAnd(await run('networkCreate', input));
  });
  return { refresh };
}

// Create an instance on a network of its pool (sizes and images the pool
// offers), and its Manage panel, which deletes it.
function setUpInstances(ctx, run, mergeAnd) {
  const { state } = ctx;
  const form = $('#instance-create');
  const refresh = () => {
    fillSelect(form.elements.poolId, state.pools.map((p) => [p.id, p.name]));
    const pool = poolOf(state, form);
    const networks = state.networks.list().filter((n) => n.poolId === pool?.id && n.state !== 'DELETING');
    fillSelect(form.elements.networkId, networks.map((n) => [n.id, n.name]), pool?.providerKind === 'AWS' ? undefined : 'None');
    // On a network, only the places it has a subnet in.
    const network = state.networks.get(form.elements.networkId.value);
    const places = placesOf(pool).filter(([value]) => !network || network.subnets.some((s) =>
      value === `zone:${s.zone}` || value === `region:${s.region}`));
    fillSelect(form.elements.place, places);
    fillSelect(form.elements.size, (pool?.sizes ?? []).map((x) => [x, x]));
    fillSelect(form.elements.image, (pool?.images ?? []).map((x) => [x, x]));
    mounts.show(network);
  };
  const mounts = mountChoices(state, $('#ic-mounts'));
  for (const field of ['poolId', 'networkId']) form.elements[field].addEventListener('change', refresh);
  wireForm(form, async (v, key) => {
    const where = place(v.place);
    const region = where.region ?? where.zone.replace(/[a-z]$/, '');
    const input = { tenantId: state.tenantId, poolId: v.poolId, name: v.name.trim(), region, size: v.size,
      image: v.image, idempotencyKey: key };
    if (where.zone) input.zone = where.zone;
    if (v.networkId) input.networkId = v.networkId;
    input.filesystems = mounts.chosen(v);
    mergeAnd(await run('instanceCreate', input));
  });
  const panel = managePanel($('#instance-manage'), () => state.instances, {
    describe: (i) => `${i.state} · ${i.size} · ${i.image} · ${i.zone ?? i.region}`
      + (i.networkId ? ` · on ${state.networks.get(i.networkId)?.name ?? i.networkId}` : '')
      + i.filesystems.map((m) => ` · mounts ${filesystemName(state, i.networkId, m.filesystemId)} at ${m.path}`).join(''),
    onOpen: () => {},
    onRefresh: () => {},
  });
  wireForm($('#instance-delete'), async () => mergeAnd(await run('instanceDelete', { tenantId: state.tenantId, instanceId: panel.id })),
    { context: () => ({ instanceId: panel.id }) });
  return { panel, refresh: () => { refresh(); panel.refresh(); } };
}

// The READY filesystems of the chosen network, each a checkbox with its mount
// path. Redrawn only when that list changes, so what was ticked and typed stays.
function mountChoices(state, box) {
  let shown = '';
  const choice = (f) => h('div', { class: 'mount-choice' },
    h('input', { type: 'checkbox', id: `ic-mount-${f.id}`, name: `mount:${f.id}` }),
    h('label', { for: `ic-mount-${f.id}` }, `Mount ${f.name} (${f.kind.toLowerCase()})`),
    h('label', { for: `ic-path-${f.id}`, class: 'visually-hidden' }, `Mount path for ${f.name}`),
    h('input', { id: `ic-path-${f.id}`, name: `path:${f.id}`, value: `/mnt/${f.name}`, required: true,
      title: 'an absolute path, outside /etc, /usr, /var and the like', autocomplete: 'off', spellcheck: 'false' }));
  return {
    show(network) {
      const ready = (state.filesystems.get(network?.id) ?? []).filter((f) => f.state === 'READY');
      box.closest('fieldset').hidden = ready.length === 0;
      const key = ready.map((f) => f.id).join();
      if (key !== shown) box.replaceChildren(...ready.map(choice));
      shown = key;
    },
    // The ticked ones, in the order shown, as the API takes them.
    chosen: (values) => Object.keys(values).filter((k) => k.startsWith('mount:'))
      .map((k) => k.slice('mount:'.length))
      .map((id) => ({ filesystem: id, path: values[`path:${id}`].trim() })),
  };
}

function filesystemName(state, networkId, id) {
  return (state.filesystems.get(networkId) ?? []).find((f) => f.id === id)?.name ?? id;
}

// A snapshot's Manage panel: restore it to a new volume of a size, or delete it.
function setUpSnapshotPanel(ctx, run, mergeAnd) {
  const { state } = ctx;
  const panel = managePanel($('#snapshot-manage'), () => state.snapshots, {
    describe: (s) => `${s.state} · of ${state.volumes.get(s.volumeId)?.name ?? 'a deleted volume'} · ${s.region}`
      + ` · restores to ${s.minDiskSizeGiB} GiB or more`,
    onOpen: (s) => {
      $('#sr-size').value = s.minDiskSizeGiB;
      $('#sr-size').min = s.minDiskSizeGiB;
    },
    onRefresh: () => {},
  });
  const onSnapshot = { context: () => ({ snapshotId: panel.id }) };
  wireForm($('#snapshot-restore'), async (v, key) => {
    mergeAnd(await run('snapshotRestore', { tenantId: state.tenantId, snapshotId: panel.id, name: v.name.trim(),
      sizeGiB: Number(v.size), idempotencyKey: key }));
  }, onSnapshot);
  wireForm($('#snapshot-delete'), async () => mergeAnd(await run('snapshotDelete', { tenantId: state.tenantId, snapshotId: panel.id })),
    onSnapshot);
  return panel;
}

// A network's Manage panel: its firewall rules, each with a Delete button, and
// the form that adds one.
function deleteButton(rule) {
  return h('button', {
    type: 'button',
    class: 'small danger',
    'aria-label': `Delete rule ${rule.name}`,
    dataset: { key: `delete-rule:${rule.id}`, rule: rule.id },
  }, 'Delete');
}

function setUpNetworkPanel(ctx, run, mergeAnd) {
  const { state } = ctx;
  const tenantId = state.tenantId;
  const deleteError = $('#rule-delete-error');
  const onNetwork = (n) => state.instances.list()
    .filter((i) => i.networkId === n.id && i.state !== 'DELETING')
    .map((i) => [i.id, `${i.name} (${i.state})`]);
  const panel = managePanel($('#network-manage'), () => state.networks, {
    describe: (n) => `${n.state} · ${n.region ?? n.subnets.map((s) => s.region).join(', ')}`
      + ` · ${(state.firewallRules.get(n.id) ?? []).length} firewall rules`,
    onOpen: () => { deleteError.hidden = true; },
    onRefresh: (n) => {
      const pool = state.pools.find((p) => p.id === n.poolId);
      const used = new Set(n.subnets.filter((s) => s.state !== 'DELETING').map((s) => s.zone ? `zone:${s.zone}` : `region:${s.region}`));
      const free = placesOf(pool).filter(([value]) => !used.has(value));
      fillSelect($('#ns-place'), free, free.length ? undefined : 'Every place has a subnet');
      fillSelect($('#nr-subnet'), n.subnets.filter((s) => s.state !== 'DELETING')
        .map((s) => [s.id, `${s.ipRange} ${s.zone ?? s.region}`]));
      // Filesystems are AWS's (EFS, FSx for Lustre).
      $('#network-manage [data-aws-only]').hidden = pool?.providerKind !== 'AWS';
      const filesystems = (state.filesystems.get(n.id) ?? []).filter((f) => f.state !== 'DELETING');
      fillSelect($('#fd-filesystem'), filesystems.map((f) => [f.id, `${f.name} (${f.kind.toLowerCase()}, ${f.state})`]),
        filesystems.length ? undefined : 'No filesystem');
      const rules = state.firewallRules.get(n.id) ?? [];
      const items = rules.map((r) => ruleItem(state, r, r.state === 'DELETING' ? null : deleteButton(r)));
      replaceKeepingFocus($('#rules-list'),
        items.length ? items : [h('li', { class: 'muted' }, 'No rules: every instance on this network is open.')]);
      fillSelect($('#rc-peer'), onNetwork(n), 'None');
      fillSelect($('#rc-applies'), onNetwork(n), 'Every instance on the network');
    },
  });
  $('#rules-list').addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-rule]');
    if (!button) return;
    button.disabled = true;
    deleteError.hidden = true;
    try {
      mergeAnd(await run('ruleDelete', { tenantId, networkId: panel.id, firewallRuleId: button.dataset.rule }));
    } catch (err) {
      deleteError.textContent = err instanceof ApiError ? err.toString() : String(err?.message ?? err);
      deleteError.hidden = false;
      button.disabled = false;
    }
  });
  const forNetwork = { context: () => ({ networkId: panel.id }) };
  const networkInput = () => ({ tenantId, networkId: panel.id });
  wireForm($('#network-add-subnet'), async (v) => {
    mergeAnd(await run('networkAddSubnet', { ...networkInput(), subnet: { ...place(v.place), ipRange: v.ipRange.trim() } }));
  }, forNetwork);
  wireForm($('#network-remove-subnet'), async (v) => {
    mergeAnd(await run('networkRemoveSubnet', { ...networkInput(), subnetId: v.subnetId }));
  }, forNetwork);
  wireForm($('#network-delete'), async () => mergeAnd(await run('networkDelete', networkInput())), forNetwork);
  const kind = $('#fc-kind');
  kind.addEventListener('change', () => { $('#fc-size').disabled = kind.value !== 'LUSTRE'; });
  wireForm($('#filesystem-create'), async (v, key) => {
    const input = { ...networkInput(), name: v.name.trim(), kind: v.kind, idempotencyKey: key };
    if (v.kind === 'LUSTRE') input.sizeGiB = Number(v.size);
    mergeAnd(await run('filesystemCreate', input));
  }, forNetwork);
  wireForm($('#filesystem-delete'), async (v) => {
    mergeAnd(await run('filesystemDelete', { ...networkInput(), filesystemId: v.filesystemId }));
  }, forNetwork);
  wireForm($('#rule-create'), async (v, key) => {
    const port = (text) => (text === '' ? null : Number(text));
    const addresses = v.addresses.split(/[\s,]+/).filter(Boolean);
    const input = {
      tenantId, networkId: panel.id, name: v.name.trim(), direction: v.direction, protocol: v.protocol,
      fromPort: port(v.fromPort), toPort: port(v.toPort),
      peers: { addresses, instanceIds: v.peerInstanceId ? [v.peerInstanceId] : [] },
      appliesTo: v.appliesTo ? [v.appliesTo] : [],
      idempotencyKey: key,
    };
    mergeAnd(await run('ruleCreate', input));
  }, { context: () => ({ networkId: panel.id }) });
  return panel;
}

// A shared volume's mount lines for a path the user picks, with Copy buttons.
function setUpMountLines(ctx, volume) {
  const form = $('#volume-mount');
  const cloud = $('#vm-cloud');
  const fstab = $('#vm-fstab');
  cloud.after(copyButton(cloud, 'the cloud-config lines', 'copy:cloud'));
  fstab.after(copyButton(fstab, 'the fstab line', 'copy:fstab'));
  wireForm(form, async (v) => {
    const data = await gql(ctx.token, MOUNT_LINES, {
      tenantId: ctx.state.tenantId, volumeId: volume.id, path: v.path.trim(), readOnly: v.readOnly === 'on',
    });
    const lines = data.providerVolume.mount?.mountLines;
    if (!lines) throw new ApiError('NOT_READY', 'the share has no mount source yet: wait until it is READY');
    // cloudConfig is one entry of cloud-config's `mounts:` list; JSON strings
    // are valid YAML, so the entry is printed as a flow sequence.
    cloud.textContent = `mounts:\n  - [${lines.cloudConfig.map((s) => JSON.stringify(s)).join(', ')}]`;
    fstab.textContent = lines.fstab;
    form.querySelector('.mount-output').hidden = false;
  }, { context: () => ({ volumeId: volume.id }), done: null }); // the lines shown say it
}
