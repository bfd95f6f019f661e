// Follows the `events` subscription over GraphQL over Server-Sent Events with the protocol's
// reference client (graphql-sse), across a restart of the server.
//
//   node playground/tests/sse.mjs <base-url> <tenant-token>
//
// The client reconnects by itself once the server is back; each reconnect sends the cursor of
// the last event it saw as `Last-Event-ID` (the reference client reads no SSE ids, so the
// script takes the cursor from the payload), and the server resumes after it.
// Protocol with the harness (stdout/stdin): once the event of volume `sse-before` (made by the
// script) has arrived, the script prints {"await":"restart"} and reads one line; meanwhile the
// harness kills the server, starts it again on the same port and database, makes volume
// `sse-during` before the client can be back, and writes `restarted`. The script then waits for
// `sse-during`'s event and makes `sse-after`, and checks no event came twice.
// The last stdout line is {"ok":true,...} or {"ok":false,"error":...}.
import readline from 'node:readline';
import { createClient } from 'graphql-sse';

const [base, token] = process.argv.slice(2);
const say = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

let lastCursor = null;
let connects = 0;
// Reconnects wait for the harness's word, so that `sse-during` is made while the client is away.
let harnessDone;
const restarted = new Promise((resolve) => { harnessDone = resolve; });
const client = createClient({
  url: `${base}/graphql`,
  headers: () => {
    connects += 1;
    return { authorization: `Bearer ${token}`, ...(lastCursor ? { 'last-event-id': lastCursor } : {}) };
  },
  retryAttempts: 400,
  retry: () => restarted.then(() => new Promise((resolve) => setTimeout(resolve, 250))),
});

const seen = [];
const waiting = [];
function arrived(event) {
  seen.push(event);
  lastCursor = event.cursor;
  for (const w of [...waiting]) if (w.match(event)) { waiting.splice(waiting.indexOf(w), 1); w.resolve(event); }
}
function waitFor(match, what, ms = 60_000) {
  const found = seen.find(match);
  if (found) return Promise.resolve(found);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no event of ${what} within ${ms} ms`)), ms);
    waiting.push({ match, resolve: (e) => { clearTimeout(timer); resolve(e); } });
  });
}

async function makeVolume(name) {
  const pools = await gql('{ pools(tenantId: "demo") { id name } }');
  const pool = pools.pools.find((p) => p.name === 'demo').id;
  await gql(`mutation { providerVolumeCreate(input: { tenantId: "demo", poolId: "${pool}", name: "${name}",
    region: "nyc3", sizeGiB: 1, idempotencyKey: "${name}" }) { id } }`);
}

async function gql(query) {
  const response = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

const named = (name) => (e) => e.type === 'providerVolume.created' && e.data?.name === name;

async function main() {
  const subscription = client.iterate({
    query: 'subscription { events(tenantId: "demo", types: ["providerVolume.*"]) { id cursor type subject data } }',
  });
  (async () => {
    for await (const result of subscription) {
      if (result.errors) throw new Error(JSON.stringify(result.errors));
      arrived(result.data.events);
    }
  })().catch((err) => { say({ ok: false, error: `the subscription failed: ${err.message ?? err}` }); process.exit(1); });

  // The stream is live once an event made now arrives.
  await new Promise((r) => setTimeout(r, 500));
  await makeVolume('sse-before');
  await waitFor(named('sse-before'), 'sse-before');
  say({ await: 'restart' });
  const reply = await lines.next();
  if (reply.value?.trim() !== 'restarted') throw new Error(`the harness said ${reply.value}`);
  harnessDone();
  await waitFor(named('sse-during'), 'sse-during, made while the client was away');
  await makeVolume('sse-after');
  await waitFor(named('sse-after'), 'sse-after');
  const ids = seen.map((e) => e.id);
  const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
  if (twice.length) throw new Error(`events came twice: ${twice.join(', ')}`);
  if (connects < 2) throw new Error(`the client connected ${connects} times: it never reconnected`);
  say({ ok: true, events: seen.length, connects });
  process.exit(0);
}

main().catch((err) => { say({ ok: false, error: String(err.message ?? err) }); process.exit(1); });
