// Drives the live dashboard in headless Chromium, the way a person would use it.
//
//   node playground/tests/dashboard.mjs <base-url> <tenant-token> <screenshot-dir>
//
// The page is <base-url>/dashboard (DASHBOARD_PATH overrides the path, e.g.
// `/dashboard.html` under vite). Steps, each with a screenshot in <screenshot-dir>:
//  1. signed-in.png      open /dashboard#token=…; the fragment is gone from the URL, tenant `demo` shows
//  2. volume-price.png, volume-pending.png, volume-ready.png
//                        create `from-the-page` (10 GiB, block) from the form, which says its
//                        monthly price (1.00 USD, a dry run) before the click; its row shows
//                        PENDING, then READY, with no reload
//  3. quota-exceeded.png a 5000 GiB volume (quota 2000) is said to be refused before the click,
//                        and shows QUOTA_EXCEEDED in the form, naming the
//                        pool `demo` (not its id); no row
//  4. snapshot-restored.png, snapshot-deleted.png
//                        the volume's panel takes a snapshot; the snapshot's panel restores it to
//                        a new volume `restored` (READY), then deletes it (its row goes)
//  5. network-ready.png, rule-ready.png, rule-conflict.png, rule-deleted.png
//                        a network `lan` and an instance `app` on it from their forms (READY);
//                        the network's Manage panel adds a rule (TCP 22 from one address, on
//                        `app`) by its labels: READY, shown in the networks table; the same name
//                        again is CONFLICT in the form; Delete takes it off the list
//     shared-volume-mount.png
//                        a shared volume `files` on `lan` (Shared: Network required, 50 GiB at
//                        least): READY; its panel shows the mount lines for /mnt/files and Copy
//                        puts the fstab line on the clipboard; then it is deleted
//  6. offline.png, resumed.png
//                        restart of the server by the harness (protocol below), in the middle of
//                        the hour: the Offline banner shows; once back it goes away,
//                        `made-while-away` (made by the harness while the page was offline)
//                        appears, `from-the-page` is there once, no event shows twice, and `lan`
//                        and `app`, made before the restart, are READY still; an address
//                        submitted offline said NETWORK, and once back says the connection is
//                        back; submitted again, it is made once
//  7. volume-attached.png, volume-resized.png, volume-detached.png
//                        a block volume `data` attached to `app` (made before the restart) from
//                        its panel, resized to 20 GiB, detached (Detach then disabled), deleted
//     address-assigned.png, address-unassigned.png
//                        an address `front` reserved, assigned to `app` (the row names it, and
//                        Assign no longer offers `app`), unassigned ("not assigned"), released
//     filesystem-ready.png, instance-mounts.png, filesystem-deleted.png
//                        a network `train` on the AWS pool, and from its panel an NFS filesystem
//                        `shared`: READY with its mount line in the table; an instance `trainer`
//                        on `train` mounting `shared` at /mnt/shared (READY, the row and its
//                        panel say so); the instance deleted from its panel, then the filesystem
//  8. narrow.png, phone.png         at 420×800 the volumes table shows and nothing is wider than the
//                        window outside a sideways-scrolling box; Tab reaches the create form
//
// Restart protocol (stdout/stdin): the script prints one line
//   {"await":"restart","query":"mutation { providerVolumeCreate(…made-while-away…) { id state } }"}
// and then reads one line from stdin. The harness kills the server, starts it again on the same
// port and database, POSTs `query` to /graphql with the tenant token, and writes `restarted\n`.
// Until then the page's new WebSockets are closed at once (page.routeWebSocket), so the page
// cannot reconnect before the change is made; after it they pass through to the server.
//
// The last stdout line is {"ok":true,...} or {"ok":false,"error":...}; exit code 0 or 1. Only
// loopback resolves and any other request fails the run. On failure the screenshot of the step
// that failed is saved. Chromium is /usr/bin/chromium unless CHROMIUM names another.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { isLoopback, launch } from './chromium.mjs';

// The restart step waits on the harness, so the whole run gets more than GraphiQL's test.
const TIMEOUT_MS = 360_000;
const STEP_TIMEOUT_MS = 30_000;
const VOLUME = 'from-the-page';
const TOO_BIG = 'too-big-for-the-quota';
const AWAY = 'made-while-away';

const DASHBOARD_PATH = process.env.DASHBOARD_PATH || '/dashboard';
const [baseUrl, token, shotDir] = process.argv.slice(2);
let browser;
let page;
let currentShot = 'start.png';
let finished = false;

async function finish(report) {
  if (finished) return;
  finished = true;
  console.log(JSON.stringify(report));
  await browser?.close().catch(() => {});
  process.exit(report.ok ? 0 : 1);
}


const shot = (name) => page.screenshot({ path: path.join(shotDir, name) });
const step = (name) => { currentShot = name; };
const check = (ok, message) => { if (!ok) throw new Error(message); };

// One line from the harness, on stdin.
function nextStdinLine() {
  const lines = readline.createInterface({ input: process.stdin });
  return new Promise((resolve, reject) => {
    lines.once('line', (line) => { resolve(line.trim()); lines.close(); });
    lines.once('close', () => reject(new Error('the harness closed stdin before writing `restarted`')));
  });
}

const volumeRows = (name) => page.locator('[data-testid="volumes-table"] tbody tr[data-id]', {
  has: page.locator('.name', { hasText: new RegExp(`^${name}$`) }),
});

async function waitForBadge(row, state) {
  await row.locator('.badge').first().filter({ hasText: new RegExp(`^${state}$`) })
    .waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS })
    .catch(async () => {
      const text = await row.innerText().catch(() => '(no row)');
      const seen = await page.evaluate(() => window.dashboardTestStates?.join(' -> '));
      throw new Error(`the row never showed ${state}; it shows: ${text.replace(/\s+/g, ' ')} (states seen: ${seen || 'none'})`);
    });
}

// The API itself, with the page's token: what the page should be showing.
async function api(query) {
  const response = await fetch(new URL('/graphql', baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(`${query}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

async function run() {
  if (!baseUrl || !token || !shotDir) {
    throw new Error('usage: node dashboard.mjs <base-url> <tenant-token> <screenshot-dir>');
  }
  fs.mkdirSync(shotDir, { recursive: true });
  browser = await launch(STEP_TIMEOUT_MS);
  // Copy buttons write the clipboard; the test reads it back.
  page = await browser.newPage({ viewport: { width: 1280, height: 800 }, permissions: ['clipboard-read', 'clipboard-write'] });
  const requests = [];
  const pageErrors = [];
  let navigations = 0;
  page.on('request', (req) => req.url().startsWith('data:') || requests.push(req.url()));
  page.on('websocket', (ws) => requests.push(ws.url()));
  page.on('pageerror', (err) => pageErrors.push(err.message));
  // The page is served with a Content-Security-Policy: anything it refuses is reported here.
  const refusedByPolicy = [];
  page.on('console', (m) => /Content Security Policy/i.test(m.text()) && refusedByPolicy.push(m.text()));
  // Counts loads of a new document (a reload would be one); the fragment's
  // removal by history.replaceState is a same-document change and is not.
  page.on('load', () => { navigations += 1; });

  // 1. Sign in from the fragment.
  step('signed-in.png');
  const pageUrl = new URL(DASHBOARD_PATH, baseUrl).href;
  await page.goto(`${pageUrl}#token=${encodeURIComponent(token)}`, { timeout: STEP_TIMEOUT_MS });
  const tenant = page.getByTestId('tenant');
  await tenant.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS }).catch(async () => {
    const error = await page.locator('#sign-in .form-error').innerText().catch(() => '');
    throw new Error(`the dashboard did not sign in (${error || 'no error shown'}); page errors: ${pageErrors.join(' | ') || 'none'}`);
  });
  check((await tenant.innerText()).includes('demo'), `the tenant shown is "${await tenant.innerText()}", not demo`);
  check(!page.url().includes('#') && !page.url().includes(token), `the fragment is still in the URL: ${page.url()}`);
  await page.getByTestId('volumes-table').waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS });
  // The demo pool's quotas, the instances and networks ones too, each a bar with its numbers.
  for (const resource of ['diskGiB', 'addresses', 'instances', 'networks']) {
    const bar = page.getByRole('meter', { name: `${resource} used` }).first();
    await bar.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS }).catch(() => {
      throw new Error(`no ${resource} quota bar on the pools`);
    });
  }
  const machines = await page.locator('.pool .machines').first().innerText();
  check(machines.includes('s-1vcpu-1gb'), `the demo pool's machines are not shown: "${machines}"`);
  // A marker that a reload or navigation would lose.
  await page.evaluate(() => { window.dashboardTestMarker = 'still the same document'; });
  const loadsAtStart = navigations;
  await shot('signed-in.png');

  // 2. Create a volume; its row goes PENDING, then READY, live.
  step('volume-pending.png');
  const form = page.getByTestId('volume-create-form');
  const demoPool = await form.locator('select[name="poolId"] option', { hasText: /^demo$/ }).first().getAttribute('value');
  check(demoPool, 'the pool picker does not offer the demo pool');
  await form.getByLabel('Pool').selectOption(demoPool);
  const region = await form.getByLabel('Region').inputValue();
  check(region, 'the region picker offers no region for the demo pool');
  await form.getByLabel('Name').fill(VOLUME);
  await form.getByLabel('Size (GiB)').fill('10');
  await form.getByLabel('Kind').selectOption('BLOCK');
  // Before the click, the form says what the volume costs a month (a dry run's plan).
  const price = form.getByTestId('volume-price');
  await price.filter({ hasText: 'Monthly price: 1.00 USD' }).waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`no monthly price of 10 GiB in the form: "${await price.innerText()}"`); });
  await shot('volume-price.png');
  // Every state the row shows, as it shows it (READY can follow PENDING within
  // ~150 ms: the simulated cloud makes a block volume at once).
  await page.evaluate((name) => {
    window.dashboardTestStates = [];
    new MutationObserver(() => {
      for (const tr of document.querySelectorAll('[data-testid="volumes-table"] tbody tr[data-id]')) {
        if (tr.querySelector('.name')?.textContent !== name) continue;
        const state = tr.querySelector('.badge')?.textContent;
        if (state && window.dashboardTestStates.at(-1) !== state) window.dashboardTestStates.push(state);
      }
    }).observe(document.getElementById('volumes-rows'), { childList: true, subtree: true, characterData: true });
  }, VOLUME);
  // So that PENDING stays long enough to be photographed, the page's refetches
  // (`query Nodes`, sent on each event) are held back 1.5 s during this step;
  // READY must still arrive by itself, from the subscription.
  const slowRefetch = async (route) => {
    if (route.request().postData()?.includes('query Nodes')) await new Promise((r) => setTimeout(r, 1500));
    await route.fallback();
  };
  await page.route('**/graphql', slowRefetch);
  await form.getByRole('button', { name: 'Create volume' }).click();
  const row = volumeRows(VOLUME);
  await waitForBadge(row, 'PENDING');
  await shot('volume-pending.png');
  step('volume-ready.png');
  await waitForBadge(row, 'READY');
  await page.unroute('**/graphql', slowRefetch);
  const states = await page.evaluate(() => window.dashboardTestStates);
  check(states[0] === 'PENDING' && states.includes('READY'), `the row showed ${states.join(' -> ')}, not PENDING then READY`);
  const volumeId = await row.getAttribute('data-id');
  await shot('volume-ready.png');

  // 3. A refused create shows its code in the form, and makes no row.
  step('quota-exceeded.png');
  await form.getByLabel('Name').fill(TOO_BIG);
  await form.getByLabel('Size (GiB)').fill('5000');
  // The dry run says the refusal before the click.
  await price.filter({ hasText: 'Would be refused: QUOTA_EXCEEDED' }).waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the form does not say 5000 GiB would be refused: "${await price.innerText()}"`); });
  await form.getByRole('button', { name: 'Create volume' }).click();
  const formError = form.locator('.form-error');
  await formError.filter({ hasText: 'QUOTA_EXCEEDED' }).waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS })
    .catch(async () => {
      throw new Error(`no QUOTA_EXCEEDED in the form; it shows: ${await formError.innerText().catch(() => '')}`);
    });
  const refusal = (await formError.innerText()).trim();
  check(refusal.includes('“demo”') && !/pool_[0-9a-z]{26}/.test(refusal), `the refusal names the pool by its id: ${refusal}`);
  check(await volumeRows(TOO_BIG).count() === 0, `a row for ${TOO_BIG} appeared`);
  check(await form.getByLabel('Name').inputValue() === TOO_BIG, 'the form lost its values on error');
  await shot('quota-exceeded.png');

  // 4. A snapshot of the volume, restored to a new volume, then deleted.
  await snapshotRestored();

  // 5. A network and an instance from their forms, and a firewall rule from the network's panel;
  // a shared volume on that network, its mount line copied.
  const rules = await firewallRule(demoPool, region);
  const mountLine = await sharedVolumeMounted(demoPool, region);

  // 6. The server restarts while the page cannot reconnect; then it resumes.
  step('offline.png');
  let blockSockets = true;
  // Only sockets made from now on are routed (the live one stays direct and
  // drops with the server). A WebSocket route cannot be removed, so after the
  // restart the handler passes sockets through to the server instead.
  await page.routeWebSocket(/\/graphql/, (ws) => {
    if (blockSockets) ws.close();
    else ws.connectToServer();
  });
  const key = `made-while-away-${Date.now().toString(36)}`;
  const mutation = `mutation { providerVolumeCreate(input: { tenantId: "demo", poolId: "${demoPool}", `
    + `name: "${AWAY}", region: "${region}", sizeGiB: 5, idempotencyKey: "${key}" }) { id state } }`;
  const restarted = nextStdinLine();
  console.log(JSON.stringify({ await: 'restart', query: mutation }));
  const banner = page.getByTestId('connection-banner');
  await banner.filter({ hasText: 'Offline' }).waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS })
    .catch(() => { throw new Error('the Offline banner did not show after the server went away'); });
  // A submit while the network is gone says NETWORK in its form.
  const addressForm = page.getByTestId('address-create-form');
  await addressForm.getByLabel('Name').fill('sent-offline');
  await page.context().setOffline(true);
  await addressForm.getByRole('button', { name: 'Reserve address' }).click();
  const addressError = addressForm.locator('.form-error');
  await addressError.filter({ hasText: 'NETWORK' }).waitFor({ timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`no NETWORK error offline: ${await addressError.innerText().catch(() => '')}`); });
  await addressError.scrollIntoViewIfNeeded();
  // Scrolled down to the form, the Offline banner is still in sight.
  const bannerBox = await banner.boundingBox();
  check(bannerBox && bannerBox.y >= 0 && bannerBox.y < 100, `the Offline banner is out of sight (${JSON.stringify(bannerBox)})`);
  await shot('offline.png');
  const answer = await restarted;
  check(answer === 'restarted', `the harness wrote "${answer}", not "restarted"`);
  await page.context().setOffline(false);
  blockSockets = false;

  step('resumed.png');
  await page.waitForFunction(
    () => !document.querySelector('[data-testid="connection-banner"]').textContent.includes('Offline'),
    null, { timeout: STEP_TIMEOUT_MS },
  ).catch(() => { throw new Error('the Offline banner stayed after the server came back'); });
  const away = volumeRows(AWAY);
  await away.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS })
    .catch(() => { throw new Error(`the row ${AWAY} (made while the page was offline) never appeared`); });
  const awayId = await away.getAttribute('data-id');
  check(await volumeRows(VOLUME).count() === 1, `the row ${VOLUME} shows ${await volumeRows(VOLUME).count()} times`);
  const eventIds = await page.locator('[data-testid="events-list"] li[data-id]').evaluateAll(
    (items) => items.map((li) => li.dataset.id),
  );
  const duplicates = eventIds.filter((id, i) => eventIds.indexOf(id) !== i);
  check(duplicates.length === 0, `events shown twice: ${duplicates.join(', ')}`);
  // Events made while the page was offline reach it only by the replay after its cursor.
  const replayed = await page.locator('[data-testid="events-list"] li[data-id]', {
    has: page.locator('.event-subject', { hasText: awayId }),
  }).filter({ hasText: 'providerVolume.created' }).count();
  check(replayed === 1, `the events list shows providerVolume.created of ${AWAY} ${replayed} times, not once`);
  check(await page.evaluate(() => window.dashboardTestMarker) === 'still the same document' && navigations === loadsAtStart,
    'the page was reloaded or navigated');
  // What was made before the restart is still there, as it was.
  await waitForBadge(rowsOf('networks-table', 'lan'), 'READY');
  await waitForBadge(rowsOf('instances-table', 'app'), 'READY');
  await waitForBadge(volumeRows(VOLUME), 'READY');
  // The NETWORK error is no longer true; the same submit again makes the address once.
  await addressError.filter({ hasText: 'The connection is back' }).waitFor({ timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`after reconnecting the form says: ${await addressError.innerText().catch(() => '')}`); });
  await addressForm.getByRole('button', { name: 'Reserve address' }).click();
  await waitForBadge(rowsOf('addresses-table', 'sent-offline'), 'READY');
  check(await rowsOf('addresses-table', 'sent-offline').count() === 1, 'the address submitted again shows twice');
  // The quota bars agree with the API once the page is back.
  const { quotas } = await api('{ quotas(tenantId: "demo") { poolId resource used } }');
  const used = quotas.find((q) => q.poolId === demoPool && q.resource === 'diskGiB').used;
  const diskBar = page.getByRole('meter', { name: 'diskGiB used' }).first();
  await page.waitForFunction(([bar, want]) => bar.getAttribute('aria-valuenow') === String(want),
    [await diskBar.elementHandle(), used], { timeout: 5_000 })
    .catch(async () => { throw new Error(`the demo pool shows ${await diskBar.getAttribute('aria-valuenow')} GiB used, the API ${used}`); });
  await shot('resumed.png');

  // 7. The cloud made before the restart takes new changes: a block volume attached to `app`,
  // resized, detached and deleted; an address reserved, assigned to `app`, unassigned and
  // deleted. Then an AWS network with an NFS filesystem, and an instance mounting it.
  await volumeOnInstance(demoPool, region);
  await addressOnInstance(demoPool, region);
  const filesystem = await nfsOnAws();

  // 8. A narrow window, and the keyboard.
  step('narrow.png');
  await page.setViewportSize({ width: 420, height: 800 });
  await page.getByTestId('volumes-table').scrollIntoViewIfNeeded();
  check(await page.getByTestId('volumes-table').isVisible(), 'the volumes table is not visible at 420 px');
  const tooWide = await page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
    const offenders = [];
    for (const el of document.querySelectorAll('body *')) {
      const rect = el.getBoundingClientRect();
      if (rect.width === 0 || rect.right <= width + 1) continue;
      // Fine inside a box that scrolls sideways and itself fits the window.
      let box = el.parentElement;
      while (box && box !== document.body && !scrolls(box)) box = box.parentElement;
      if (box && box !== document.body && box.getBoundingClientRect().right <= width + 1) continue;
      offenders.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}.${el.className} (${Math.round(rect.right)} px)`);
    }
    return { offenders: offenders.slice(0, 5), pageWidth: document.documentElement.scrollWidth, width };
  });
  check(tooWide.offenders.length === 0 && tooWide.pageWidth <= tooWide.width,
    `wider than the ${tooWide.width} px window: ${tooWide.offenders.join(', ') || `the page (${tooWide.pageWidth} px)`}`);
  await shot('narrow.png');
  // A 390 px phone: a volume's name and its Manage button are both in sight without scrolling.
  step('phone.png');
  await page.setViewportSize({ width: 390, height: 800 });
  const phoneRow = volumeRows(VOLUME);
  await phoneRow.scrollIntoViewIfNeeded();
  const inSight = async (locator) => {
    const box = await locator.boundingBox();
    return box && box.x >= 0 && box.x + box.width <= 390;
  };
  check(await inSight(phoneRow.locator('.name')), 'at 390 px the volume\'s name is off screen');
  check(await inSight(page.getByRole('button', { name: `Manage volume ${VOLUME}` })), 'at 390 px Manage is off screen');
  await shot('phone.png');
  await page.setViewportSize({ width: 420, height: 800 });
  const keyboard = await tabToCreateForm();

  const remote = requests.filter((url) => !isLoopback(url));
  check(remote.length === 0, `requests to non-loopback hosts: ${remote.join(', ')}`);
  check(!requests.some((url) => url.includes(token)), 'the token was sent in a URL');
  check(pageErrors.length === 0, `page errors: ${pageErrors.join(' | ')}`);
  check(refusedByPolicy.length === 0, `the page's policy refused: ${refusedByPolicy.join(' | ')}`);
  return {
    ok: true, volumeId, states, awayId, region, poolId: demoPool, refusal, rules, mountLine, filesystem,
    events: eventIds.length, keyboard,
    requests: requests.length,
  };
}

// From the volume's Manage panel a snapshot is taken; from the snapshot's, it
// is restored to a new volume (READY) and then deleted (its row goes).
async function snapshotRestored() {
  step('snapshot-restored.png');
  await page.getByRole('button', { name: `Manage volume ${VOLUME}` }).click({ timeout: STEP_TIMEOUT_MS });
  const volumePanel = page.locator('#volume-manage');
  await volumePanel.getByLabel('Snapshot name').fill('first-snap');
  await volumePanel.getByRole('button', { name: 'Snapshot' }).click();
  const snapshotRow = rowsOf('snapshots-table', 'first-snap');
  await waitForBadge(snapshotRow, 'READY');
  await volumePanel.getByRole('button', { name: 'Close' }).click();
  await page.getByRole('button', { name: 'Manage snapshot first-snap' }).click({ timeout: STEP_TIMEOUT_MS });
  const panel = page.locator('#snapshot-manage');
  await panel.getByLabel('New volume name').fill('restored');
  await panel.getByRole('button', { name: 'Restore' }).click();
  const restored = rowsOf('volumes-table', 'restored');
  await waitForBadge(restored, 'READY');
  await restored.scrollIntoViewIfNeeded();
  await shot('snapshot-restored.png');
  step('snapshot-deleted.png');
  await panel.getByLabel('Yes, delete this snapshot').check();
  await panel.getByRole('button', { name: 'Delete snapshot' }).click();
  await snapshotRow.waitFor({ state: 'detached', timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the deleted snapshot stayed: ${await snapshotRow.innerText().catch(() => '')}`); });
  await shot('snapshot-deleted.png');
}

// A network `train` on the demo's AWS pool (one zone), then from its Manage
// panel an NFS filesystem `shared`: READY with its mount line in the networks
// table; then deleted from the panel.
async function nfsOnAws() {
  step('filesystem-ready.png');
  const form = page.getByTestId('network-create-form');
  await form.getByLabel('Network name').fill('train');
  await form.getByLabel('Pool').selectOption({ label: 'demo-aws' });
  await form.getByLabel('Region or zone').selectOption({ label: 'us-east-1a' });
  await form.getByLabel('Subnet range').fill('10.70.1.0/24');
  await form.getByLabel('VPC range').fill('10.70.0.0/16');
  await form.getByRole('button', { name: 'Create network' }).click();
  const row = rowsOf('networks-table', 'train');
  await waitForBadge(row, 'READY');
  await page.getByRole('button', { name: 'Manage network train' }).click({ timeout: STEP_TIMEOUT_MS });
  const panel = page.locator('#network-manage');
  await panel.getByLabel('Filesystem name').fill('shared');
  await panel.getByLabel('Filesystem kind').selectOption('NFS');
  await panel.getByRole('button', { name: 'Add filesystem' }).click();
  const item = row.locator('.filesystems li', { has: page.locator('.name', { hasText: /^shared$/ }) });
  await waitForBadge(item, 'READY');
  const mount = (await item.locator('.mount-line').innerText()).trim();
  check(mount.includes('nfs'), `no mount line for the NFS filesystem: ${mount}`);
  await row.scrollIntoViewIfNeeded();
  await shot('filesystem-ready.png');
  await panel.getByRole('button', { name: 'Close' }).click();
  const trainer = await instanceMounting();
  step('filesystem-deleted.png');
  await page.getByRole('button', { name: 'Manage network train' }).click({ timeout: STEP_TIMEOUT_MS });
  const choice = await panel.locator('#fd-filesystem option', { hasText: 'shared' }).getAttribute('value');
  await panel.getByLabel('Filesystem', { exact: true }).selectOption(choice);
  await panel.getByRole('button', { name: 'Delete filesystem' }).click();
  await item.waitFor({ state: 'detached', timeout: 60_000 })
    .catch(async () => { throw new Error(`the deleted filesystem stayed: ${await item.innerText().catch(() => '')}`); });
  await shot('filesystem-deleted.png');
  await panel.getByRole('button', { name: 'Close' }).click();
  return { mount, trainer };
}

// An instance `trainer` on `train`, mounting `shared` at /mnt/shared, from the create form (the
// network's READY filesystems are offered as checkboxes with their paths); READY, its row and its
// panel name the mount; then deleted from its panel (a mounted filesystem cannot be deleted).
async function instanceMounting() {
  step('instance-mounts.png');
  const form = page.getByTestId('instance-create-form');
  await form.getByLabel('Instance name').fill('trainer');
  await form.getByLabel('Pool').selectOption({ label: 'demo-aws' });
  await form.getByLabel('Network').selectOption({ label: 'train' });
  await form.getByLabel('Mount shared (nfs)').check({ timeout: STEP_TIMEOUT_MS });
  check(await form.getByLabel('Mount path for shared').inputValue() === '/mnt/shared', 'the mount path is not offered as /mnt/shared');
  await form.getByRole('button', { name: 'Create instance' }).click();
  const row = rowsOf('instances-table', 'trainer');
  await waitForBadge(row, 'READY');
  check((await row.innerText()).includes('mounts at /mnt/shared'), `the instance row does not show its mount: ${await row.innerText()}`);
  await page.getByRole('button', { name: 'Manage instance trainer' }).click({ timeout: STEP_TIMEOUT_MS });
  const panel = page.locator('#instance-manage');
  const summary = (await panel.locator('.summary').innerText()).trim();
  check(summary.includes('mounts shared at /mnt/shared'), `the instance's panel reads "${summary}"`);
  await panel.scrollIntoViewIfNeeded();
  await shot('instance-mounts.png');
  await panel.getByLabel('Yes, delete this instance').check();
  await panel.getByRole('button', { name: 'Delete instance' }).click();
  await row.waitFor({ state: 'detached', timeout: 60_000 })
    .catch(async () => { throw new Error(`the deleted instance stayed: ${await row.innerText().catch(() => '')}`); });
  return { summary };
}

// A shared volume `files` on `lan`: Shared asks for a network and sets 50 GiB; READY, then its
// panel shows the mount lines for /mnt/files, and Copy puts the fstab line on the clipboard.
async function sharedVolumeMounted(poolId, region) {
  step('shared-volume-mount.png');
  const form = page.getByTestId('volume-create-form');
  await form.getByLabel('Pool').selectOption(poolId);
  await form.getByLabel('Region').selectOption(region);
  await form.getByLabel('Name').fill('files');
  await form.getByLabel('Size (GiB)').fill('10');
  await form.getByLabel('Kind').selectOption('SHARED');
  check(await form.getByLabel('Network').evaluate((el) => el.required), 'a shared volume\'s network is not required');
  check(Number(await form.getByLabel('Size (GiB)').inputValue()) === 50, 'Shared left the size under 50 GiB');
  await form.getByLabel('Network').selectOption({ label: 'lan' });
  await form.getByRole('button', { name: 'Create volume' }).click();
  const row = volumeRows('files');
  await waitForBadge(row, 'READY');
  await page.getByRole('button', { name: 'Manage volume files' }).click({ timeout: STEP_TIMEOUT_MS });
  const panel = page.locator('#volume-manage');
  await panel.getByLabel('Mount path').fill('/mnt/files');
  await panel.getByRole('button', { name: 'Show mount lines' }).click();
  const fstab = panel.locator('#vm-fstab');
  await fstab.filter({ hasText: '/mnt/files' }).waitFor({ timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`no fstab line for /mnt/files: ${await panel.innerText()}`); });
  await panel.getByRole('button', { name: 'Copy the fstab line' }).click();
  await panel.getByText('Copied').waitFor({ timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`Copy did not say Copied: ${await panel.innerText()}`); });
  const copied = (await page.evaluate(() => navigator.clipboard.readText())).trim();
  check(copied === (await fstab.innerText()).trim() && /\snfs4?\s/.test(copied), `the clipboard holds "${copied}"`);
  await panel.scrollIntoViewIfNeeded();
  await shot('shared-volume-mount.png');
  await panel.getByLabel('Yes, delete this volume').check();
  await panel.getByRole('button', { name: 'Delete volume' }).click();
  await row.waitFor({ state: 'detached', timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the deleted shared volume stayed: ${await row.innerText().catch(() => '')}`); });
  // Gone from the page, it is still named in its events.
  await page.locator('[data-testid="events-list"] li[data-id]', { hasText: 'providerVolume.deleted' })
    .filter({ has: page.locator('.event-name', { hasText: /^files$/ }) }).first()
    .waitFor({ timeout: STEP_TIMEOUT_MS })
    .catch(() => { throw new Error('the event of the deleted shared volume does not name it'); });
  return copied;
}

async function volumeOnInstance(poolId, region) {
  step('volume-attached.png');
  const form = page.getByTestId('volume-create-form');
  await form.getByLabel('Pool').selectOption(poolId);
  await form.getByLabel('Region').selectOption(region);
  await form.getByLabel('Name').fill('data');
  await form.getByLabel('Size (GiB)').fill('10');
  await form.getByLabel('Kind').selectOption('BLOCK');
  await form.getByRole('button', { name: 'Create volume' }).click();
  const row = volumeRows('data');
  await waitForBadge(row, 'READY');
  await page.getByRole('button', { name: 'Manage volume data' }).click({ timeout: STEP_TIMEOUT_MS });
  const panel = page.locator('#volume-manage');
  await panel.locator('#volume-attach').getByLabel('Instance').selectOption({ label: 'app (READY)' }, { timeout: STEP_TIMEOUT_MS });
  await panel.getByRole('button', { name: 'Attach', exact: true }).click();
  const attached = row.locator('ul.plain li', { hasText: 'app' });
  await attached.locator('.badge').filter({ hasText: /^READY$/ }).waitFor({ timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the volume never showed attached to app: ${await row.innerText()}`); });
  await shot('volume-attached.png');

  step('volume-resized.png');
  await panel.getByLabel('New size (GiB)').fill('20');
  await panel.getByRole('button', { name: 'Resize' }).click();
  await row.locator('.num', { hasText: /^20 GiB/ }).waitFor({ timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the row never showed 20 GiB: ${await row.innerText()}`); });
  await waitForBadge(row, 'READY');
  await shot('volume-resized.png');

  step('volume-detached.png');
  await panel.locator('#volume-detach').getByRole('button', { name: 'Detach' }).click();
  await attached.waitFor({ state: 'detached', timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the attachment stayed: ${await row.innerText()}`); });
  const detachEnabled = await panel.locator('#volume-detach').getByRole('button', { name: 'Detach' }).isEnabled();
  check(!detachEnabled, 'Detach is offered with nothing attached');
  await shot('volume-detached.png');
  await panel.getByLabel('Yes, delete this volume').check();
  await panel.getByRole('button', { name: 'Delete volume' }).click();
  await row.waitFor({ state: 'detached', timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the deleted volume stayed: ${await row.innerText().catch(() => '')}`); });
}

async function addressOnInstance(poolId, region) {
  step('address-assigned.png');
  const form = page.getByTestId('address-create-form');
  await form.getByLabel('Name').fill('front');
  await form.getByLabel('Pool').selectOption(poolId);
  await form.getByLabel('Region').selectOption(region);
  await form.getByRole('button', { name: 'Reserve address' }).click();
  const row = rowsOf('addresses-table', 'front');
  await waitForBadge(row, 'READY');
  await page.getByRole('button', { name: 'Manage address front' }).click({ timeout: STEP_TIMEOUT_MS });
  const panel = page.locator('#address-manage');
  await panel.getByLabel('Instance').selectOption({ label: 'app (READY)' }, { timeout: STEP_TIMEOUT_MS });
  await panel.getByRole('button', { name: 'Assign', exact: true }).click();
  // The row's sixth cell is its assignment.
  await row.locator('td').nth(5).locator('.badge').filter({ hasText: /^READY$/ }).waitFor({ timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the address never showed assigned: ${await row.innerText()}`); });
  check((await row.innerText()).includes('app'), `the address row does not name app: ${await row.innerText()}`);
  const offered = await panel.locator('#aa-instance option').allInnerTexts();
  check(!offered.some((o) => o.startsWith('app ')), `Assign still offers the instance it is on: ${offered.join(', ')}`);
  await shot('address-assigned.png');
  step('address-unassigned.png');
  await panel.getByRole('button', { name: 'Unassign' }).click();
  await row.getByText('not assigned').waitFor({ timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the address never showed unassigned: ${await row.innerText()}`); });
  await shot('address-unassigned.png');
  await panel.getByLabel('Yes, release this address').check();
  await panel.getByRole('button', { name: 'Delete address' }).click();
  await row.waitFor({ state: 'detached', timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the deleted address stayed: ${await row.innerText().catch(() => '')}`); });
}

const rowsOf = (table, name) => page.locator(`[data-testid="${table}"] tbody tr[data-id]`, {
  has: page.locator('.name', { hasText: new RegExp(`^${name}$`) }),
});

// A network `lan` and an instance `app` on it are made from their forms, by
// their labels; then, in the network's Manage panel, a rule opening TCP 22 to
// one address on `app` is added, goes READY and shows in the networks table;
// a second rule of the same name is refused with CONFLICT in the form; and
// the first is deleted from the panel.
async function firewallRule(poolId, region) {
  step('network-ready.png');
  const networkForm = page.getByTestId('network-create-form');
  await networkForm.getByLabel('Network name').fill('lan');
  await networkForm.getByLabel('Pool').selectOption(poolId);
  await networkForm.getByLabel('Region or zone').selectOption({ label: region });
  await networkForm.getByLabel('Subnet range').fill('10.50.0.0/24');
  await networkForm.getByRole('button', { name: 'Create network' }).click();
  const networkRow = rowsOf('networks-table', 'lan');
  await waitForBadge(networkRow, 'READY');
  const network = await networkRow.getAttribute('data-id');

  const instanceForm = page.getByTestId('instance-create-form');
  await instanceForm.getByLabel('Instance name').fill('app');
  await instanceForm.getByLabel('Pool').selectOption(poolId);
  await instanceForm.getByLabel('Network').selectOption({ label: 'lan' });
  await instanceForm.getByLabel('Region or zone').selectOption({ label: region });
  await instanceForm.getByRole('button', { name: 'Create instance' }).click();
  const instanceRow = rowsOf('instances-table', 'app');
  await waitForBadge(instanceRow, 'READY');
  const instance = await instanceRow.getAttribute('data-id');
  await instanceRow.scrollIntoViewIfNeeded();
  await shot('network-ready.png');

  step('rule-ready.png');
  await page.getByRole('button', { name: 'Manage network lan' }).click({ timeout: STEP_TIMEOUT_MS });
  const panel = page.locator('#network-manage');
  const form = page.getByTestId('rule-create-form');
  await form.getByLabel('Rule name').fill('ssh');
  await form.getByLabel('Direction').selectOption({ label: 'Inbound (to the instances)' });
  await form.getByLabel('Protocol').selectOption({ label: 'TCP' });
  await form.getByLabel('From port').fill('22');
  await form.getByLabel('Peer addresses').fill('203.0.113.7');
  await form.getByLabel('Applies to').selectOption({ label: 'app (READY)' }, { timeout: STEP_TIMEOUT_MS });
  await form.getByRole('button', { name: 'Add rule' }).click();
  const item = panel.getByTestId('rules-list').locator('li', { has: page.locator('.name', { hasText: /^ssh$/ }) });
  await waitForBadge(item, 'READY');
  const summary = (await item.locator('.rule-summary').innerText()).trim();
  check(summary === 'inbound tcp 22 from 203.0.113.7/32 · app', `the rule reads "${summary}"`);
  const inTable = page.locator('[data-testid="networks-table"] tbody tr[data-id] .rules li', { hasText: 'ssh' });
  check(await inTable.count() === 1, 'the networks table does not list the rule');
  await panel.scrollIntoViewIfNeeded();
  await shot('rule-ready.png');

  step('rule-conflict.png');
  await form.getByLabel('Rule name').fill('ssh');
  await form.getByLabel('From port').fill('2222');
  await form.getByLabel('Peer addresses').fill('198.51.100.0/24');
  await form.getByRole('button', { name: 'Add rule' }).click();
  const formError = form.locator('.form-error');
  await formError.filter({ hasText: 'CONFLICT' }).waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`no CONFLICT in the rule form: ${await formError.innerText().catch(() => '')}`); });
  await shot('rule-conflict.png');

  step('rule-deleted.png');
  await panel.getByRole('button', { name: 'Delete rule ssh' }).click();
  await item.waitFor({ state: 'detached', timeout: STEP_TIMEOUT_MS })
    .catch(async () => { throw new Error(`the deleted rule stayed: ${await item.innerText().catch(() => '')}`); });
  await shot('rule-deleted.png');
  await panel.getByRole('button', { name: 'Close' }).click();
  return { network, instance, summary };
}

// From the page's first control (the skip link), Tab must reach the create
// form's name input and then its submit button, each showing a focus outline.
async function tabToCreateForm() {
  // Focusing it also moves Chromium's starting point of sequential navigation
  // (else Tab would go on from the last button clicked).
  await page.locator('.skip-link').focus();
  const reached = [];
  for (let i = 0; i < 60 && reached.length < 2; i += 1) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement;
      const form = el?.closest('[data-testid="volume-create-form"]');
      return {
        name: form && el.name === 'name',
        submit: form && el.type === 'submit',
        outline: getComputedStyle(el).outlineStyle,
      };
    });
    const want = reached.length === 0 ? 'name' : 'submit';
    if (focused[want]) {
      check(focused.outline !== 'none', `the focused ${want} shows no focus outline`);
      reached.push(`${want} after ${i + 1} Tab`);
    }
  }
  check(reached.length === 2, `Tab did not reach the create form (${reached.join(', ') || 'not even its name'})`);
  return reached;
}

setTimeout(() => finish({ ok: false, error: `timed out after ${TIMEOUT_MS / 1000} s` }), TIMEOUT_MS);
run().then(finish, async (err) => {
  // A picture of the failure helps whoever reads the test log.
  if (page && shotDir) await page.screenshot({ path: path.join(shotDir, currentShot) }).catch(() => {});
  await finish({ ok: false, error: String(err?.message ?? err) });
});
