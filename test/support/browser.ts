import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, chromium } from 'playwright-core';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const { findChromium } = require('../../scripts/lib/chromium.js') as { findChromium(): string | undefined };

/**
 * A real headless Chromium (Debian's package, CHROMIUM_PATH or the usual locations: scripts/lib/chromium.js)
 * driven by playwright-core. Playwright gives it a fresh profile of its own; the flags keep it off the
 * network beyond the pages it is sent to (no background requests, updates or sync).
 */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = findChromium();
  if (!executablePath) throw new Error('no Chromium found: apt-get install chromium, or set CHROMIUM_PATH');
  return chromium.launch({
    executablePath,
    headless: true,
    chromiumSandbox: false,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/** Where screenshots go: `npm run screenshots` sets SCREENSHOTS_DIR to docs/screenshots; tests otherwise keep theirs in the run's data dir. */
export function screenshotDir(): string {
  const dir = process.env.SCREENSHOTS_DIR ?? join(process.env.TEST_DATA_DIR ?? join(__dirname, '..', '..', '.data', 'test'), 'screenshots');
  mkdirSync(dir, { recursive: true });
  return dir;
}
