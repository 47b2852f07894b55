/**
 * `resil dashboard` in a real Chromium (playwright-core driving Debian's /usr/bin/chromium), over a
 * real fleet: a `resil run` process on Redis and the dashboard process, both the built binary.
 *
 * `RESIL_DASHBOARD_SCREENSHOTS=1` also writes docs/dashboard-jobs.png and docs/dashboard-job.png.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLockStore } from '../../src/stores/redis/store.ts';
import { createProject, ensureCliBuilt, type Project, repoRoot, tsConfig } from '../cli/cli-support.ts';
import { ensureBuilt, type RunFixture, type RunProcess, startRun } from '../cli/run-process.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';
import { skipOrFail } from '../support/services.ts';
import { type DashboardProcess, startDashboard, writeDashboardFixture } from './dashboard-process.ts';

const chromiumPath = '/usr/bin/chromium';
const browser = existsSync(chromiumPath)
  ? chromiumPath
  : skipOrFail(
      `Dashboard browser tests skipped: ${chromiumPath} is missing (Debian's chromium package; .ci/run installs it).`,
    );
const redisUrl = await redisUrlForTests();
const screenshots = process.env.RESIL_DASHBOARD_SCREENSHOTS === '1';
const dashboardInstance = `dashboard@${hostname()}`;
/** The page asks the API every 2 s: what it shows may take two rounds. */
const eventually = { timeout: 6_000 };

/** Chromium's own background connections fail on this kind of machine; none of them is needed. */
const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe.skipIf(!browser || !redisUrl)('resil dashboard in Chromium, over a real fleet on Redis', () => {
  let client: Redis;
  let store: RedisLockStore;
  let fixture: RunFixture;
  let run: RunProcess;
  let dashboard: DashboardProcess;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  let evil: Server | undefined;
  /** Every request the browser made (page loads, scripts, fetches, form posts). */
  const requests: string[] = [];

  beforeAll(async () => {
    ensureCliBuilt();
    ensureBuilt();
    client = new Redis(redisUrl!);
    fixture = writeDashboardFixture({ prefix: uniquePrefix('dashboard-browser') });
    store = new RedisLockStore(client, { prefix: fixture.prefix });
    run = startRun(fixture, { instance: 'web-1', redisUrl: redisUrl! });
    profile = mkdtempSync(join(tmpdir(), 'resil-chromium-'));
    const [started, launched] = await Promise.all([
      startDashboard({
        cwd: fixture.directory,
        configPath: fixture.configPath,
        args: ['--allow-actions'],
        env: { FIXTURE_REDIS_URL: redisUrl!, FIXTURE_INSTANCE: 'ops-1' },
      }),
      chromium.launchPersistentContext(profile, {
        executablePath: browser!,
        headless: true,
        args: chromiumArgs,
        viewport: { width: 1280, height: 800 },
      }),
    ]);
    dashboard = started;
    context = launched;
    context.on('request', (request) => requests.push(request.url()));
    page = context.pages()[0] ?? (await context.newPage());
    await run.waitForLine((line) => line.outcome === 'success', 15_000, 'a first run');
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await new Promise((resolve) => (evil === undefined ? resolve(undefined) : evil.close(resolve)));
    await Promise.all([dashboard?.stop(), run?.process.stop()]);
    if (profile) rmSync(profile, { recursive: true, force: true });
    await deleteKeys(client, fixture.prefix);
    fixture.remove();
    await client.quit();
  });

  const row = (name: string) => page.locator(`tr[data-job="${name}"]`);

  it('the jobs table lists the fleet: schedules in words, last runs by the running instance, a lease, the instance', async () => {
    await page.goto(dashboard.url);
    await expect.poll(() => page.locator('tbody tr[data-job]').count(), eventually).toBe(5);
    expect(await page.locator('tr[data-job] > th').allTextContents()).toEqual([
      'tick',
      'sync-prices',
      'cache-rebuild',
      'nightly-report',
      'weekly-cleanup',
    ]);
    await expect
      .poll(() => row('tick').textContent(), eventually)
      .toMatch(/Every second \* \* \* \* \* \*UTC.*success.*on web-1/);
    expect(await row('nightly-report').textContent()).toMatch(
      /At 02:00 0 2 \* \* \*Europe\/Berlinin .*GMT\+[12]never/,
    );
    expect(await row('weekly-cleanup').textContent()).toContain('At 06:30, only on Monday');
    // cache-rebuild works 4 s of every 3 s: its lease is (nearly) always held, by web-1.
    await expect
      .poll(() => row('cache-rebuild').locator('td').nth(5).textContent(), { timeout: 10_000 })
      .toMatch(/^web-1 token \d+ · expires in \d+s$/);
    const instances = page.locator('section[aria-labelledby="instances-title"] tbody tr');
    await expect.poll(() => instances.count(), eventually).toBe(1);
    expect(await instances.textContent()).toMatch(/^web-1/);
    // Real buttons, named for each job.
    for (const name of ['Trigger tick', 'Pause tick', 'Trigger nightly-report']) {
      expect(await page.getByRole('button', { name, exact: true }).count()).toBe(1);
    }
    expect(await page.locator('table').count()).toBe(2);
  });

  it("a job's page shows the runs that resil run made: timeline, history, the latest failure, the next 10 runs", async () => {
    await page.getByRole('link', { name: 'sync-prices', exact: true }).click();
    await page.waitForURL(/\/jobs\/sync-prices$/);
    // sync-prices runs every 2 s and fails every 6 s: wait for both in the ledger.
    const marks = async () =>
      Math.min(
        await page.locator('.timeline .mark.success').count(),
        await page.locator('.timeline .mark.failure').count(),
      );
    await expect.poll(marks, { timeout: 15_000 }).toBeGreaterThan(0);
    const history = page.locator('section[aria-labelledby="history-title"] tbody tr');
    expect(await history.first().locator('td').nth(1).textContent()).toBe('web-1');
    expect(await page.locator('.failed-run pre').textContent()).toBe(
      'Error: upstream answered 503 Service Unavailable',
    );
    expect(await page.locator('ol.next li').count()).toBe(10);
    expect(await page.locator('dl.summary').textContent()).toContain('Every 2 seconds');
    const label = await page.locator('.timeline').getAttribute('aria-label');
    expect(label).toMatch(/^Timeline of the last \d+ occurrences, oldest first: .*\d+ failure/);
  });

  it('pause from the page, by keyboard: the running instance skips its next fires as paused; resume runs it again', async () => {
    try {
      await page.goto(`${dashboard.url}jobs/tick`);
      const reason = page.getByLabel('Reason (optional, recorded with a trigger or a pause)');
      await reason.fill('maintenance');
      await page.getByRole('button', { name: 'Pause tick', exact: true }).focus();
      const fromLine = run.lines().length;
      await page.keyboard.press('Enter');
      await expect.poll(() => page.locator('#message').textContent(), eventually).toMatch(/^Paused tick: /);
      const pause = await store.pauseOf('tick', { key: 'tick' });
      expect(pause).toMatchObject({ by: dashboardInstance, reason: 'maintenance' });
      const skipped = await run.waitForLine(
        (line) =>
          line.job === 'tick' &&
          line.reason === 'paused' &&
          Date.parse(String(line.scheduledAt)) > pause!.pausedAt,
        10_000,
        'a fire skipped as paused',
        fromLine,
      );
      expect(skipped.outcome).toBe('skipped');
      const [latest] = await store.runHistory('tick', { key: 'tick', limit: 1 });
      expect(latest).toMatchObject({ outcome: 'skipped', reason: 'paused' });
      // The page shows it, and the focus stayed on the button, now Resume.
      await expect.poll(() => page.locator('.timeline .mark.skipped').count(), eventually).toBeGreaterThan(0);
      await expect
        .poll(() => page.locator('dl.summary').textContent(), eventually)
        .toContain(`paused by ${dashboardInstance}: maintenance`);
      expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(
        'Resume tick',
      );
      await page.keyboard.press('Space');
      await expect.poll(() => page.locator('#message').textContent(), eventually).toMatch(/^Resumed tick: /);
      expect(await store.pauseOf('tick', { key: 'tick' })).toBeUndefined();
      const resumedAt = await store.now();
      await run.waitForLine(
        (line) =>
          line.job === 'tick' &&
          line.outcome === 'success' &&
          Date.parse(String(line.scheduledAt)) > resumedAt,
        10_000,
        'a run after resume',
        fromLine,
      );
    } finally {
      // Whatever failed above, the later tests see tick running.
      await store.resumeJob('tick', { key: 'tick' });
    }
  });

  it('Trigger from the table runs the job in the dashboard, recorded as dashboard@<host>', async () => {
    await page.goto(dashboard.url);
    await page.getByRole('button', { name: 'Trigger nightly-report', exact: true }).click();
    await expect
      .poll(() => page.locator('#message').textContent(), eventually)
      .toMatch(new RegExp(`^Triggered nightly-report: running as ${dashboardInstance}, token \\d+\\.$`));
    await expect
      .poll(() => row('nightly-report').locator('td').nth(3).textContent(), { timeout: 10_000 })
      .toContain(`success`);
    expect(await row('nightly-report').locator('td').nth(3).textContent()).toContain(
      `on ${dashboardInstance}`,
    );
    const [record] = await store.runHistory('nightly-report', { key: 'nightly-report', limit: 1 });
    expect(record).toMatchObject({ outcome: 'success', instance: dashboardInstance });
  });

  it('a POST without the token, or from another origin, is refused (403) and changes nothing', async () => {
    await page.goto(dashboard.url);
    const withoutToken = await page.evaluate(async () => {
      const response = await fetch('/api/jobs/tick/pause', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      return { status: response.status, body: await response.json() };
    });
    expect(withoutToken).toEqual({
      status: 403,
      body: { error: "an action needs the token of the dashboard's page in the x-resil-token header" },
    });

    // Another site on this machine: a form that posts to the dashboard (no preflight), and a script.
    const target = `${dashboard.url}api/jobs/tick/pause`;
    evil = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(`<!doctype html><title>elsewhere</title>
<form method="POST" action="${target}" enctype="text/plain"><input name='{"reason":"csrf","x":"' value='"}'></form>`);
    });
    await new Promise<void>((resolve) => evil!.listen(0, '127.0.0.1', resolve));
    const evilUrl = `http://127.0.0.1:${(evil.address() as { port: number }).port}/`;
    const other = await context.newPage();
    try {
      await other.goto(evilUrl);
      const scripted = await other.evaluate(async (url) => {
        try {
          const response = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-resil-token': 'guessed' },
            body: '{}',
          });
          return `answered ${response.status}`;
        } catch {
          return 'blocked';
        }
      }, target);
      expect(scripted).toBe('blocked');
      const [posted] = await Promise.all([
        other.waitForResponse(
          (response) => response.url() === target && response.request().method() === 'POST',
        ),
        other.locator('form').evaluate((form: HTMLFormElement) => form.submit()),
      ]);
      expect(posted.status()).toBe(403);
      expect(await posted.json()).toEqual({
        error: `an action must come from the dashboard's own page (Origin "${evilUrl.slice(0, -1)}")`,
      });
    } finally {
      await other.close();
    }
    expect(await store.pauseOf('tick', { key: 'tick' })).toBeUndefined();
  });

  it('readable at 200 % zoom, keyboard usable, light and dark by prefers-color-scheme', async () => {
    const zoomed = await context.newPage();
    try {
      // 200 % of a 1280 px window: 640 CSS px, two device pixels each.
      await zoomed.setViewportSize({ width: 640, height: 800 });
      await zoomed.goto(dashboard.url);
      await expect.poll(() => zoomed.locator('tbody tr[data-job]').count(), eventually).toBe(5);
      const overflow = await zoomed.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      // Tab from the top: the skip link, then the links and buttons in reading order.
      const reached: string[] = [];
      for (let step = 0; step < 12; step++) {
        await zoomed.keyboard.press('Tab');
        reached.push(
          await zoomed.evaluate(() => {
            const active = document.activeElement as HTMLElement;
            return `${active.tagName.toLowerCase()}:${active.getAttribute('aria-label') ?? active.textContent}`;
          }),
        );
      }
      expect(reached.slice(0, 4)).toEqual(['a:Skip to content', 'a:resil dashboard', 'div:Jobs', 'a:tick']);
      expect(reached).toContain('button:Trigger tick');
      expect(reached).toContain('button:Pause tick');
      const outline = await zoomed.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
      expect(outline).toBe('solid');

      const colours = async () =>
        zoomed.evaluate(() => [
          getComputedStyle(document.body).backgroundColor,
          getComputedStyle(document.body).color,
        ]);
      await zoomed.emulateMedia({ colorScheme: 'light' });
      expect(await colours()).toEqual(['rgb(255, 255, 255)', 'rgb(31, 35, 40)']);
      await zoomed.emulateMedia({ colorScheme: 'dark' });
      expect(await colours()).toEqual(['rgb(13, 17, 23)', 'rgb(230, 237, 243)']);
    } finally {
      await zoomed.close();
    }
  });

  it('the table pauses a job with its own button, and shows it paused (the pages as docs/dashboard.md shows them)', {
    timeout: 60_000,
  }, async () => {
    await page.goto(dashboard.url);
    await page.getByRole('button', { name: 'Pause weekly-cleanup', exact: true }).click();
    await expect
      .poll(() => row('weekly-cleanup').locator('td').nth(4).textContent(), eventually)
      .toBe(`paused by ${dashboardInstance}`);
    expect(await store.pauseOf('weekly-cleanup', { key: 'weekly-cleanup' })).toMatchObject({
      by: dashboardInstance,
    });
    expect(await page.getByRole('button', { name: 'Resume weekly-cleanup', exact: true }).count()).toBe(1);
    if (screenshots) {
      await page.locator('#message').evaluate((element) => {
        element.textContent = '';
      });
      await page.screenshot({ path: join(repoRoot, 'docs/dashboard-jobs.png'), fullPage: true });
      // A job's page with a dozen occurrences behind it (about 25 s of the fleet).
      await page.goto(`${dashboard.url}jobs/sync-prices`);
      await expect
        .poll(() => page.locator('.timeline .mark').count(), { timeout: 40_000 })
        .toBeGreaterThanOrEqual(12);
      await page.screenshot({ path: join(repoRoot, 'docs/dashboard-job.png'), fullPage: true });
    }
  });

  it('no request left 127.0.0.1: every one went to the dashboard, or to the other site of the origin test', () => {
    expect(requests.length).toBeGreaterThan(10);
    const origins = new Set(requests.map((url) => new URL(url).origin));
    const evilOrigin =
      evil === undefined ? undefined : `http://127.0.0.1:${(evil.address() as { port: number }).port}`;
    expect([...origins].filter((origin) => origin !== dashboard.origin && origin !== evilOrigin)).toEqual([]);
    expect(dashboard.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});

describe.skipIf(!browser)(
  'resil dashboard in Chromium: job names a URL path cannot hold, and a malformed one',
  () => {
    let project: Project;
    let dashboard: DashboardProcess;
    let chrome: Browser;
    let page: Page;

    beforeAll(async () => {
      ensureCliBuilt();
      project = createProject({
        'resil.config.ts': tsConfig(`[
        { name: '..', schedule: '0 2 * * *', run: async () => {} },
        { name: '.', schedule: '0 3 * * *', run: async () => {} },
        { name: 'report', schedule: '0 4 * * *', run: async () => {} },
      ]`),
      });
      [dashboard, chrome] = await Promise.all([
        startDashboard({ cwd: project.directory, args: ['--allow-actions'] }),
        chromium.launch({ executablePath: browser!, headless: true, args: chromiumArgs }),
      ]);
      page = await chrome.newPage();
    }, 60_000);

    afterAll(async () => {
      await chrome?.close();
      await dashboard?.stop();
      project?.remove();
    });

    it('the table links . and .. by /job?name=; their pages show them and trigger them', async () => {
      await page.goto(dashboard.url);
      await expect.poll(() => page.locator('tbody tr[data-job]').count(), eventually).toBe(3);
      for (const [name, schedule] of [
        ['..', 'At 02:00'],
        ['.', 'At 03:00'],
      ] as const) {
        await page.goto(dashboard.url);
        await page.getByRole('link', { name, exact: true }).click();
        await page.waitForURL(`${dashboard.url}job?name=${encodeURIComponent(name)}`);
        await expect.poll(() => page.locator('#job-title').textContent(), eventually).toBe(name);
        expect(await page.locator('dl.summary').textContent()).toContain(schedule);
        await page.getByRole('button', { name: `Trigger ${name}`, exact: true }).click();
        await expect
          .poll(() => page.locator('#message').textContent(), eventually)
          .toMatch(new RegExp(`^Triggered ${name.replace(/\./g, '\\.')}: running as ${dashboardInstance}`));
      }
    });

    it('/jobs/%E0 (no percent-encoding of a name) and an unknown name show the unknown-job state, not Loading…', async () => {
      await page.goto(`${dashboard.url}jobs/%E0`);
      await expect.poll(() => page.locator('main h2').textContent(), eventually).toBe('Unknown job');
      expect(await page.locator('main').textContent()).toContain(
        'The address names no job: “%E0” is not a percent-encoded name.',
      );
      expect(await page.locator('#updated').textContent()).toBe('');
      expect(await page.title()).toBe('Unknown job · resil dashboard');
      await page.goto(`${dashboard.url}jobs/nope`);
      await expect.poll(() => page.locator('main h2').textContent(), eventually).toBe('Unknown job');
      expect(await page.locator('main').textContent()).toContain('The config has no job named “nope”.');
      expect(await page.locator('#updated').textContent()).toBe('');
    });
  },
);
