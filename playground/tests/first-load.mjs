// Times GraphiQL's first load in headless Chromium, as a person opening `/` meets it: a fresh
// profile (nothing cached), until the query editor shows its first line. Each run is made twice,
// as the browser asks (gzip accepted) and with `Accept-Encoding` taken off every request (what the
// server sent before it compressed), and prints the bytes that came over the wire and the time.
//
//   node playground/tests/first-load.mjs <base-url> [runs]
import { launch } from './chromium.mjs';

const [baseUrl, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 5);

async function once(compressed) {
  const browser = await launch(30_000);
  try {
    const page = await browser.newPage();
    const client = await page.context().newCDPSession(page);
    await client.send('Network.enable');
    let bytes = 0;
    client.on('Network.loadingFinished', (e) => { bytes += e.encodedDataLength; });
    // Chromium's own network stack sets Accept-Encoding; DevTools may override it.
    if (!compressed) await client.send('Network.setExtraHTTPHeaders', { headers: { 'Accept-Encoding': 'identity' } });
    const start = Date.now();
    await page.goto(new URL('/', baseUrl).href);
    await page.waitForSelector('.graphiql-query-editor .view-line', { timeout: 30_000 });
    return { ms: Date.now() - start, bytes };
  } finally {
    await browser.close();
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const figures = { gzip: [], identity: [] };
for (let i = 0; i < runs; i += 1) {
  figures.gzip.push(await once(true));
  figures.identity.push(await once(false));
}
for (const [name, list] of Object.entries(figures)) {
  const ms = list.map((r) => r.ms);
  console.log(`${name.padEnd(8)} first load: median ${median(ms)} ms (min ${Math.min(...ms)}, max ${Math.max(...ms)}), `
    + `${(median(list.map((r) => r.bytes)) / 1e6).toFixed(2)} MB over the wire`);
}
const ratio = median(figures.identity.map((r) => r.ms)) / median(figures.gzip.map((r) => r.ms));
console.log(`identity / gzip time: ${ratio.toFixed(2)}x`);
