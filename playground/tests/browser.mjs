// Drives the GraphiQL page in headless Chromium, the way a person would use it.
//
//   node playground/tests/browser.mjs <base-url> <token> <screenshot-path> [<operator-token>]
//
// Opens <base-url>/ with the Headers tab holding {"Authorization":"Bearer <token>"}
// and the query `{ me { tenantId } }`, clicks Run, waits for "tenantId" in the
// result pane and saves a screenshot. Then it checks that the schema reached what
// a person sees: the Docs explorer lists the root field `providerVolumes`
// (screenshot <path minus .png>-docs.png), and the query editor, typed into
// inside a `ProviderVolume` selection, suggests its field `attachments`
// (screenshot <path minus .png>-autocomplete.png, taken while the suggestions
// show). Then the page is reloaded and still holds the headers (kept in the
// tab's sessionStorage, never in localStorage); a second tab of the same
// browser starts with them (asked of the first), runs a subscription to the
// tenant's `project.*` events, and once the operator token (the fourth
// argument) has made two projects, the result pane lists both, newest first
// (screenshot <path minus .png>-subscription.png). DNS resolves nothing but
// loopback, and any request to another host fails the run: the page must work
// fully offline.
// Prints one JSON line, {"ok":true,"result":...,"docs":true,"docsFields":[...],
// "completions":[...],"requests":N} or {"ok":false,"error":...}, and exits 0 or 1
// accordingly. On failure the screenshot of the step that failed is saved.
// Chromium is /usr/bin/chromium unless the CHROMIUM variable names another.
import { isLoopback, launch } from './chromium.mjs';

// Three steps of up to STEP_TIMEOUT_MS each; the Rust test gives the run 120 s.
const TIMEOUT_MS = 90_000;
const STEP_TIMEOUT_MS = 25_000;
const QUERY = '{ me { tenantId } }';
// A root field of Query that the Docs explorer must list.
const DOCS_FIELD = 'providerVolumes';
// Typed into the query editor: the cursor ends inside a ProviderVolume selection,
// where COMPLETION_PREFIX is typed to open the suggestions, which must offer
// COMPLETION (a field of ProviderVolume).
const COMPLETION_QUERY = '{ providerVolumes(tenantId: "x") { edges { node { ';
const COMPLETION_PREFIX = 'a';
const COMPLETION = 'attachments';

const [baseUrl, token, screenshotPath, operatorToken] = process.argv.slice(2);
let browser;
let page;
// Where the next screenshot goes: the step under way, so a failure shows it.
let currentShot = screenshotPath;
let finished = false;

// What every tab of the run asked for, threw, or had refused by the page's policy.
const requests = [];
const pageErrors = [];
const refusedByPolicy = [];

function watch(tab) {
  // data: URLs (GraphiQL's inlined fonts) never touch the network.
  tab.on('request', (req) => req.url().startsWith('data:') || requests.push(req.url()));
  tab.on('websocket', (ws) => requests.push(ws.url()));
  tab.on('pageerror', (err) => pageErrors.push(err.message));
  // The page is served with a Content-Security-Policy: anything it refuses is reported here.
  tab.on('console', (m) => /Content Security Policy/i.test(m.text()) && refusedByPolicy.push(m.text()));
}

async function finish(report) {
  if (finished) return;
  finished = true;
  console.log(JSON.stringify(report));
  await browser?.close().catch(() => {});
  process.exit(report.ok ? 0 : 1);
}


// Runs in the page. Monaco draws each line as a `.view-line`, spaces as U+00A0.
function editorText(selector) {
  return [...document.querySelectorAll(`${selector} .view-line`)]
    .map((line) => line.textContent.replaceAll('\u00a0', ' '))
    .join('\n');
}

// `shot.png` -> `shot-<step>.png`: one screenshot per step.
function stepShot(step) {
  return screenshotPath.replace(/(\.png)?$/i, `-${step}.png`);
}

// Resolves once the editor under `selector` shows any of `needles`. (Written out, not built from
// `editorText` with `new Function`: the page's policy allows no evaluated strings.)
function waitForText(selector, needles) {
  return page.waitForFunction(
    ([sel, wanted]) => {
      const text = [...document.querySelectorAll(`${sel} .view-line`)]
        .map((line) => line.textContent.replaceAll('\u00a0', ' '))
        .join('\n');
      return wanted.some((needle) => text.includes(needle));
    },
    [selector, needles],
    { timeout: STEP_TIMEOUT_MS },
  );
}

async function run() {
  if (!baseUrl || !token || !screenshotPath) {
    throw new Error('usage: node browser.mjs <base-url> <token> <screenshot-path>');
  }
  browser = await launch(STEP_TIMEOUT_MS);
  // One context, so that a second tab shares the first one's origin (BroadcastChannel).
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();

  watch(page);

  // GraphiQL 5 starts its editors from its storage's `graphiql:query` and
  // `graphiql:headers` (@graphiql/toolkit's StorageAPI prefixes "graphiql:" to
  // @graphiql/react's STORAGE_KEY names); the page gives it the tab's
  // sessionStorage. Set once, before the first load only.
  await page.addInitScript(([query, headers]) => {
    try {
      if (sessionStorage.getItem('seeded')) return;
      sessionStorage.setItem('seeded', '1');
      sessionStorage.setItem('graphiql:query', query);
      sessionStorage.setItem('graphiql:headers', headers);
    } catch {
      // about:blank and other opaque origins have no sessionStorage
    }
  }, [QUERY, JSON.stringify({ Authorization: `Bearer ${token}` })]);

  await page.goto(new URL('/', baseUrl).href, { timeout: STEP_TIMEOUT_MS });
  // Seeing our query rather than the default one proves the keys took effect;
  // the run button also does nothing until the editor holds a query.
  await waitForText('.graphiql-query-editor', [QUERY]);
  await page.click('.graphiql-execute-button', { timeout: STEP_TIMEOUT_MS });
  // Stop at the first answer: an error response will not turn into a result.
  await waitForText('.graphiql-response', ['"tenantId"', '"errors"', '"message"']).catch((err) => {
    throw new Error(`${err.message}; page errors: ${pageErrors.join(' | ') || 'none'}`);
  });
  const result = await page.evaluate(editorText, '.graphiql-response');
  await page.screenshot({ path: screenshotPath });
  if (!result.includes('"tenantId"')) throw new Error(`no "tenantId" in the result pane: ${result}`);

  currentShot = stepShot('docs');
  const docsFields = await checkDocs();
  await page.screenshot({ path: currentShot });

  currentShot = stepShot('autocomplete');
  const completions = await checkCompletion();
  // Taken while the suggestions are still open.
  await page.screenshot({ path: currentShot });

  currentShot = stepShot('reloaded');
  const kept = await checkKept();

  currentShot = stepShot('subscription');
  const subscription = operatorToken ? await checkSubscription() : null;
  await page.screenshot({ path: currentShot });

  const remote = requests.filter((url) => !isLoopback(url));
  if (remote.length) throw new Error(`requests to non-loopback hosts: ${remote.join(', ')}`);
  if (refusedByPolicy.length) throw new Error(`the page's policy refused: ${refusedByPolicy.join(' | ')}`);
  return { ok: true, result, docs: true, docsFields, completions, kept, subscription, requests: requests.length };
}

// After a reload the query and the headers are as they were, and no storage
// but the tab's session holds the token.
async function checkKept() {
  await page.reload({ timeout: STEP_TIMEOUT_MS });
  await waitForText('.graphiql-editor-tool', ['Authorization']).catch(() => {
    throw new Error('the headers were forgotten by a reload');
  });
  const inLocalStorage = await page.evaluate((t) => Object.keys(localStorage).filter((k) => localStorage.getItem(k).includes(t)), token);
  if (inLocalStorage.length) throw new Error(`the token is in localStorage: ${inLocalStorage.join(', ')}`);
  return true;
}

// A second tab: its headers come from the first; a subscription's events show
// as a list, newest first.
async function checkSubscription() {
  const subscription = 'subscription { events(tenantId: "browser-tenant", types: ["project.*"]) { type subject } }';
  const first = page;
  page = await first.context().newPage();
  watch(page);
  await page.addInitScript((q) => sessionStorage.getItem('graphiql:query') || sessionStorage.setItem('graphiql:query', q), subscription);
  await page.goto(new URL('/', baseUrl).href, { timeout: STEP_TIMEOUT_MS });
  await waitForText('.graphiql-query-editor', ['subscription']);
  await waitForText('.graphiql-editor-tool', ['Authorization']).catch(() => {
    throw new Error('the new tab did not start with the first tab\'s headers');
  });
  await page.click('.graphiql-execute-button', { timeout: STEP_TIMEOUT_MS });
  // The socket is open once the button offers to stop.
  await page.locator('.graphiql-execute-button[aria-label*="Stop"]').waitFor({ timeout: STEP_TIMEOUT_MS })
    .catch(() => {});
  await new Promise((r) => setTimeout(r, 500));
  const made = [];
  for (const name of ['first', 'second']) {
    const response = await fetch(new URL('/graphql', baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${operatorToken}` },
      body: JSON.stringify({ query: `mutation { projectCreate(input: { tenantId: "browser-tenant", name: "${name}" }) { id } }` }),
    });
    const body = await response.json();
    if (!body.data) throw new Error(`projectCreate: ${JSON.stringify(body)}`);
    made.push(body.data.projectCreate.id);
  }
  await waitForText('.graphiql-response', ['"received": 2']).catch(async () => {
    throw new Error(`the result pane never listed two events: ${await page.evaluate(editorText, '.graphiql-response')}`);
  });
  const text = await page.evaluate(editorText, '.graphiql-response');
  const [older, newer] = made.map((id) => text.indexOf(id));
  if (older < 0 || newer < 0 || newer > older) throw new Error(`not newest first: ${text}`);
  return { made, shown: text.length };
}

// Opens the Docs plugin from the sidebar, follows the root `query: Query` link
// and returns the Query fields it lists (first few), once DOCS_FIELD is visible.
// The explorer renders from the introspected schema, so an empty explorer (e.g.
// introspection refused) shows as "Error fetching schema" or a timeout here.
async function checkDocs() {
  // @graphiql/react's sidebar labels a plugin button `Show <plugin title>`
  // (`Hide ...` once open); the doc explorer plugin's title is this one.
  await page.click('.graphiql-sidebar button[aria-label="Show Documentation Explorer"]', {
    timeout: STEP_TIMEOUT_MS,
  });
  const explorer = page.locator('section.graphiql-doc-explorer');
  // The schema root lists `query: <TypeLink>`; the link is an <a> with the type's
  // name. Waiting on it also waits for introspection to finish.
  const queryLink = explorer
    .locator('.graphiql-doc-explorer-root-type', { hasText: /^query$/ })
    .locator('xpath=..')
    .locator('a.graphiql-doc-explorer-type-name')
    .first();
  await queryLink.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS }).catch(async (err) => {
    const shown = await explorer.innerText().catch(() => '(no explorer)');
    throw new Error(`no query root type in the Docs explorer (${err.message}); it shows: ${shown.slice(0, 300)}`);
  });
  const queryType = (await queryLink.innerText()).trim();
  await queryLink.click({ timeout: STEP_TIMEOUT_MS });
  await explorer
    .locator('.graphiql-doc-explorer-title', { hasText: new RegExp(`^${queryType}$`) })
    .waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS });
  // Fields are links named `graphiql-doc-explorer-field-name`.
  const fieldLinks = explorer.locator('a.graphiql-doc-explorer-field-name');
  const wanted = fieldLinks.filter({ hasText: new RegExp(`^${DOCS_FIELD}$`) }).first();
  await wanted.waitFor({ state: 'attached', timeout: STEP_TIMEOUT_MS }).catch(async () => {
    const names = await fieldLinks.allInnerTexts();
    throw new Error(`the Docs explorer of ${queryType} does not list ${DOCS_FIELD}: ${names.join(', ')}`);
  });
  // "On screen": scrolled into the explorer's viewport, and so in the screenshot.
  await wanted.scrollIntoViewIfNeeded({ timeout: STEP_TIMEOUT_MS });
  await wanted.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS });
  const names = (await fieldLinks.allInnerTexts()).map((name) => name.trim());
  // The first few, plus DOCS_FIELD, which the Rust test looks for.
  return [...new Set([...names.slice(0, 5), DOCS_FIELD])].filter((name) => names.includes(name));
}

// Types COMPLETION_QUERY into the query editor, then COMPLETION_PREFIX, and
// returns the labels of the suggestion widget once it offers COMPLETION.
async function checkCompletion() {
  // Focus Monaco (its input is a hidden textarea) and replace the whole query.
  await page.click('.graphiql-query-editor .monaco-editor .view-lines', { timeout: STEP_TIMEOUT_MS });
  await page.keyboard.press('ControlOrMeta+A');
  // Inserted in one go, like a paste, so that no suggestion pops up (and could be
  // accepted) half-way. Monaco still closes the open braces: the editor then
  // holds `... node { }}}}` with the cursor before the first `}`.
  await page.keyboard.insertText(COMPLETION_QUERY);
  await waitForText('.graphiql-query-editor', [COMPLETION_QUERY.trimEnd()]);
  // A key press, as a person types: this is what opens the suggestions.
  await page.keyboard.type(COMPLETION_PREFIX);
  // Runs in the page: the labels of the rows Monaco's list draws (it draws only
  // the rows in view, best matches first).
  const rowLabels = ([widget]) => [...document.querySelectorAll(`${widget} .monaco-list-row`)].map(
    (row) => (row.querySelector('.monaco-icon-name-container')?.textContent ?? row.getAttribute('aria-label') ?? '').trim(),
  );
  // The query editor's suggest widget, while it shows (Monaco toggles `visible`).
  const widget = '.graphiql-query-editor .suggest-widget.visible';
  const offered = (timeout) => page.waitForFunction(
    ([sel, wanted]) => [...document.querySelectorAll(`${sel} .monaco-list-row`)]
      .map((row) => (row.querySelector('.monaco-icon-name-container')?.textContent ?? row.getAttribute('aria-label') ?? '').trim())
      .includes(wanted),
    [widget, COMPLETION],
    { timeout },
  );
  const opened = await offered(STEP_TIMEOUT_MS / 2).then(() => true, () => false);
  if (!opened) {
    // Had the schema not reached the editor yet when the key was typed, the
    // suggestions would not come back by themselves; Ctrl+Space asks again.
    await page.keyboard.press('Control+Space');
    await offered(STEP_TIMEOUT_MS / 2).catch(async (err) => {
      const seen = await page.evaluate(rowLabels, [widget]);
      const text = await page.evaluate(editorText, '.graphiql-query-editor');
      throw new Error(`no ${COMPLETION} among the suggestions (${err.message}): [${seen.join(', ')}] for: ${text}`);
    });
  }
  return page.evaluate(rowLabels, [widget]);
}

setTimeout(() => finish({ ok: false, error: `timed out after ${TIMEOUT_MS / 1000} s` }), TIMEOUT_MS);
run().then(finish, async (err) => {
  // A picture of the failure helps whoever reads the test log.
  if (page && currentShot) await page.screenshot({ path: currentShot }).catch(() => {});
  await finish({ ok: false, error: String(err?.message ?? err) });
});
