import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { consoleDir } from '../../src/modules/console/console.setup';

/**
 * The console's browser tests' shared parts: Debian's `chromium` driven by playwright-core (which downloads no
 * browser), tabs that record dialogs, page errors and CSP violations, sign-in, and the accessibility check (axe-core).
 */
export const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p && fs.existsSync(p));

/** A tenant string that would run script if it were rendered as HTML. */
export const XSS = '<img src=x onerror=alert(1)>';

export interface Tab {
  page: Page;
  context: BrowserContext;
  /** Browser dialogs opened (alert, confirm): the console opens none. */
  dialogs: string[];
  /** Page errors and Content-Security-Policy violations. */
  errors: string[];
}

/** One browser for a suite; `url` is the gateway's, set once it has started. */
export class ConsoleBrowser {
  url = '';
  private browser?: Browser;
  private readonly contexts: BrowserContext[] = [];

  async launch(): Promise<void> {
    assert.ok(consoleDir(), 'the console is built by npm run build (dist/console)');
    this.browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'], headless: true });
  }

  async close(): Promise<void> {
    for (const c of this.contexts) await c.close().catch(() => undefined);
    await this.browser?.close();
  }

  /** A fresh tab (its own session storage). */
  async newPage(opts: { acceptDownloads?: boolean } = {}): Promise<Tab> {
    assert.ok(this.browser, 'launch() first');
    const context = await this.browser.newContext({ acceptDownloads: opts.acceptDownloads ?? false });
    this.contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const dialogs: string[] = [];
    const errors: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(`${d.type()}: ${d.message()}`);
      void d.dismiss();
    });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content.Security.Policy/i.test(m.text())) errors.push(m.text());
    });
    return { page, context, dialogs, errors };
  }

  /**
   * Saves a screenshot of the page (from `from` down) as `<CONSOLE_SCREENSHOTS>/console-<name>.png` when that variable names a folder
   * (`npm run console:screenshots` writes docs/images/ for the README); does nothing otherwise.
   */
  async screenshot(page: Page, name: string, from?: Locator): Promise<void> {
    const dir = process.env.CONSOLE_SCREENSHOTS;
    if (!dir) return;
    fs.mkdirSync(dir, { recursive: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    // From `from` down, or the top of the page (evaluated as text: this file has no DOM types).
    await page.evaluate('window.scrollTo(0, 0)');
    const box = from ? await from.boundingBox() : null;
    if (box) await page.evaluate(`window.scrollBy(0, ${Math.max(0, Math.round(box.y) - 8)})`);
    await page.screenshot({ path: path.join(dir, `console-${name}.png`), fullPage: false });
  }

  /** Signs in with the operator key, or a database key and its database's name, and waits for the answer. */
  async signIn(page: Page, key: string, database?: string, base = this.url): Promise<void> {
    await page.goto(`${base}/console`);
    if (database) {
      await page.getByLabel('Database key').check();
      await page.getByLabel('Database', { exact: true }).fill(database);
    }
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Signed in (the header's Sign out) or refused (an alert): a page opened before that would be replaced by the
    // one the sign-in opens.
    await page.getByRole('button', { name: 'Sign out' }).or(page.getByRole('alert')).first().waitFor();
  }
}

/** No browser dialog, page error or CSP violation happened in the tab. */
export function assertClean(tab: Tab): void {
  assert.deepEqual(tab.dialogs, [], 'no browser dialog');
  assert.deepEqual(tab.errors, [], 'no page error or CSP violation');
}

const AXE_SOURCE = () => fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * The page's serious and critical accessibility violations (axe-core, WCAG 2.0/2.1 A and AA rules), as text. axe
 * is evaluated through the DevTools protocol, which the page's CSP does not govern: the page itself runs no eval.
 */
export async function a11yViolations(page: Page): Promise<string[]> {
  // Evaluated as text: this file is compiled without the DOM's types.
  if (!(await page.evaluate<boolean>("'axe' in window"))) await page.evaluate(AXE_SOURCE());
  const violations = await page.evaluate<{ id: string; impact: string; help: string; nodes: string[] }[]>(`
    axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }).then((r) =>
      r.violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        nodes: v.nodes.slice(0, 3).map((n) => JSON.stringify(n.target)),
      })),
    )`);
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.join(', ')}`);
}

/**
 * A browser suite: skipped, saying why, only when no Chromium binary exists (.ci/run installs one) or, run from the
 * sources, the console is not built. The suite gets a launched browser, closed after it.
 */
export function describeInBrowser(title: string, suite: (b: ConsoleBrowser) => void): void {
  if (!CHROMIUM || (!consoleDir() && __filename.endsWith('.ts'))) {
    const why = !CHROMIUM
      ? 'no chromium binary found (apt-get install chromium, or set CHROMIUM_PATH)'
      : 'the console is not built (npm run build)';
    describe(title, () => {
      it('needs a Chromium binary and a built console', { skip: why }, () => {});
    });
    return;
  }
  describe(title, () => {
    const b = new ConsoleBrowser();
    after(() => b.close());
    suite(b);
  });
}
