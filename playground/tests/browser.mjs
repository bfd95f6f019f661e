// Drives the GraphiQL page in headless Chromium, the way a person would use it.
//
//   node playground/tests/browser.mjs <base-url> <token> <screenshot-path>
//
// Opens <base-url>/ with the Headers tab holding {"Authorization":"Bearer <token>"}
// and the query `{ me { tenantId } }`, clicks Run, waits for "tenantId" in the
// result pane and saves a screenshot. DNS resolves nothing but loopback, and any
// request to another host fails the run: the page must work fully offline.
// Prints one JSON line, {"ok":true,"result":...,"requests":N} or
// {"ok":false,"error":...}, and exits 0 or 1 accordingly.
// Chromium is /usr/bin/chromium unless the CHROMIUM variable names another.
import fs from 'node:fs';
import { chromium } from 'playwright-core';

const TIMEOUT_MS = 60_000;
const STEP_TIMEOUT_MS = 25_000;
const QUERY = '{ me { tenantId } }';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const [baseUrl, token, screenshotPath] = process.argv.slice(2);
let browser;
let page;
let finished = false;

async function finish(report) {
  if (finished) return;
  finished = true;
  console.log(JSON.stringify(report));
  await browser?.close().catch(() => {});
  process.exit(report.ok ? 0 : 1);
}

function isLoopback(url) {
  const { protocol, hostname } = new URL(url);
  if (['data:', 'blob:', 'about:'].includes(protocol)) return true;
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

// Runs in the page. Monaco draws each line as a `.view-line`, spaces as U+00A0.
function editorText(selector) {
  return [...document.querySelectorAll(`${selector} .view-line`)]
    .map((line) => line.textContent.replaceAll('\u00a0', ' '))
    .join('\n');
}

// Resolves once the editor under `selector` shows any of `needles`.
function waitForText(selector, needles) {
  return page.waitForFunction(
    ([fn, sel, wanted]) => {
      const text = new Function(`return ${fn}`)()(sel);
      return wanted.some((needle) => text.includes(needle));
    },
    [editorText.toString(), selector, needles],
    { timeout: STEP_TIMEOUT_MS },
  );
}

async function run() {
  if (!baseUrl || !token || !screenshotPath) {
    throw new Error('usage: node browser.mjs <base-url> <token> <screenshot-path>');
  }
  // Checked here because a failed launch leaves Playwright's temp dirs behind.
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (set CHROMIUM)`);
  // Playwright gives each launch a fresh, temporary profile (--user-data-dir).
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: STEP_TIMEOUT_MS,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic',
      // Only loopback names resolve, so a CDN fallback or a web font cannot load.
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
    ],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });

  const requests = [];
  const pageErrors = [];
  // data: URLs (GraphiQL's inlined fonts) never touch the network.
  page.on('request', (req) => req.url().startsWith('data:') || requests.push(req.url()));
  page.on('websocket', (ws) => requests.push(ws.url()));
  page.on('pageerror', (err) => pageErrors.push(err.message));

  // GraphiQL 5 starts its editors from localStorage `graphiql:query` and
  // `graphiql:headers` (@graphiql/toolkit's StorageAPI prefixes "graphiql:" to
  // @graphiql/react's STORAGE_KEY names). Headers are read even though
  // GraphiQL does not persist them by default.
  await page.addInitScript(([query, headers]) => {
    try {
      localStorage.setItem('graphiql:query', query);
      localStorage.setItem('graphiql:headers', headers);
    } catch {
      // about:blank and other opaque origins have no localStorage
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

  const remote = requests.filter((url) => !isLoopback(url));
  if (remote.length) throw new Error(`requests to non-loopback hosts: ${remote.join(', ')}`);
  return { ok: true, result, requests: requests.length };
}

setTimeout(() => finish({ ok: false, error: `timed out after ${TIMEOUT_MS / 1000} s` }), TIMEOUT_MS);
run().then(finish, async (err) => {
  // A picture of the failure helps whoever reads the test log.
  if (page && screenshotPath) await page.screenshot({ path: screenshotPath }).catch(() => {});
  await finish({ ok: false, error: String(err?.message ?? err) });
});
