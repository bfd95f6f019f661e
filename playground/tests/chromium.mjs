// Headless Chromium as both browser tests run it: a fresh profile per launch, and only
// loopback names resolving, so that anything the page would fetch from the internet fails.
import fs from 'node:fs';
import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export async function launch(timeout) {
  // Checked here because a failed launch leaves Playwright's temp dirs behind.
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (set CHROMIUM)`);
  // Playwright gives each launch a fresh, temporary profile (--user-data-dir).
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic',
      // Only loopback names resolve, so a CDN or a web font cannot load.
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
    ],
  });
}

export function isLoopback(url) {
  const { protocol, hostname } = new URL(url);
  if (['data:', 'blob:', 'about:'].includes(protocol)) return true;
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}
