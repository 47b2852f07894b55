/**
 * The dashboard page's script, run in the browser: `npm run build` bundles it with what it imports
 * into dist/cli/dashboard.js, which the dashboard serves as `/dashboard.js`. It polls the JSON API
 * every `refreshMs` and redraws, keeping the focused control focused; the page reads `/` as the
 * jobs table and `/jobs/<name>` (or `/job?name=<name>`) as that job's page. Times are shown as
 * `resil jobs list` shows them: in the job's timezone with the zone's name, and relative to the
 * store's clock.
 */
import { maxReasonLength } from '../reason.ts';
import { formatElapsed, formatSpan, formatTimeIn } from '../time-format.ts';
import type { JobHistoryEntry } from '../views/history.ts';
import type { InstanceEntry } from '../views/instances.ts';
import type { DashboardJob, JobDetail, Overview, StoreView } from './api.ts';

/** How often the page asks the API again. */
const refreshMs = 2_000;

type Child = Node | string | null | undefined | false;
type Props = Record<string, string | boolean | undefined>;
type Action = 'trigger' | 'pause' | 'resume';

const token = document.querySelector<HTMLMetaElement>('meta[name="resil-token"]')?.content;
const main = document.getElementById('main')!;
const updated = document.getElementById('updated')!;
const message = document.getElementById('message')!;
const storeLine = document.getElementById('store')!;
const jobSegment = /^\/jobs\/([^/]+)\/?$/.exec(location.pathname)?.[1];
/** The job this page is of (`/jobs/<name>`, `/job?name=<name>`); undefined on `/`. */
let jobName: string | undefined;
/** True when `/jobs/<segment>` is no percent-encoding (`/jobs/%E0`): no job has that name. */
let malformedJobPath = false;
if (location.pathname === '/job') {
  jobName = new URLSearchParams(location.search).get('name') ?? '';
} else if (jobSegment !== undefined) {
  try {
    jobName = decodeURIComponent(jobSegment);
  } catch {
    jobName = jobSegment;
    malformedJobPath = true;
  }
}
const localZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
/** The store's clock minus this browser's, from the last answer. */
let skewMs = 0;
let timer: number | undefined;
let firstRender = true;
/** The actions under way, by `action:job`. */
const busy = new Set<string>();

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    if (name === 'class') element.className = String(value);
    else element.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children)
    if (child !== null && child !== undefined && child !== false) element.append(child);
  return element;
}

// Times as the commands show them.
const timeIn = (iso: string, timeZone: string) => formatTimeIn(new Date(iso), timeZone);
function relative(iso: string): string {
  const ms = Date.parse(iso) - (Date.now() + skewMs);
  return ms >= 0 ? `in ${formatSpan(ms)}` : `${formatSpan(ms)} ago`;
}
function when(iso: string, timeZone: string): HTMLElement {
  return h(
    'span',
    { class: 'when' },
    h('time', { datetime: iso, class: 'rel' }, relative(iso)),
    ' ',
    h('span', { class: 'abs' }, timeIn(iso, timeZone)),
  );
}

const symbols: Record<string, string> = {
  success: '✓',
  failure: '✗',
  skipped: '↷',
  running: '▶',
  queued: '…',
};
function badge(outcome: string, reason?: string | null): HTMLElement {
  const text = reason ? `${outcome} (${reason})` : outcome;
  return h(
    'span',
    { class: `badge ${outcome}` },
    h('span', { 'aria-hidden': 'true' }, symbols[outcome] ?? '•'),
    ` ${text}`,
  );
}
const muted = (text: string) => h('span', { class: 'muted' }, text);
/**
 * The page (`base` '') or API (`base` '/api') path of a job, or of one of its actions. A URL
 * cannot hold `.` or `..` as a path segment (it resolves them away, `%2E` too), so those two are
 * addressed by `?name=` under `/job`, as the server also accepts for any name.
 */
function jobPath(base: '' | '/api', name: string, action?: Action): string {
  const tail = action === undefined ? '' : `/${action}`;
  return name === '.' || name === '..'
    ? `${base}/job${tail}?name=${encodeURIComponent(name)}`
    : `${base}/jobs/${encodeURIComponent(name)}${tail}`;
}
const jobHref = (name: string) => jobPath('', name);

function say(text: string, isError = false): void {
  message.textContent = text;
  message.className = isError ? 'error' : '';
}

// Actions (only with --allow-actions: the page then carries the token).
async function act(action: Action, job: string, body: Record<string, unknown> = {}): Promise<void> {
  const verbs = { trigger: 'Triggering', pause: 'Pausing', resume: 'Resuming' };
  say(`${verbs[action]} ${job}…`);
  try {
    const response = await fetch(jobPath('/api', job, action), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-resil-token': token ?? '' },
      body: JSON.stringify(body),
    });
    const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (!response.ok) {
      say(`Could not ${action} ${job}: ${String(answer.error ?? `HTTP ${response.status}`)}`, true);
    } else if (action === 'trigger') {
      reasonInput.value = '';
      say(
        answer.outcome === 'running'
          ? `Triggered ${job}: running as ${String(answer.instance)}${answer.token === null ? '' : `, token ${String(answer.token)}`}.`
          : `Triggered ${job}: ${String(answer.outcome)}${answer.error ? `: ${String(answer.error)}` : ''}.`,
        answer.outcome === 'failure',
      );
    } else if (action === 'pause') {
      reasonInput.value = '';
      say(`Paused ${job}: every resil run skips its fires (reason paused) from its next fire on.`);
    } else {
      say(`Resumed ${job}: every resil run runs it again from its next fire on.`);
    }
  } catch (error) {
    say(`Could not ${action} ${job}: ${(error as Error).message}`, true);
  }
  await refresh();
}
/** A button whose visible text is `text` (`Pause`), named for screen readers with the job (`Pause nightly-report`). */
function actionButton(action: Action, job: string, text: string, body?: () => Record<string, unknown>) {
  const button = h(
    'button',
    {
      type: 'button',
      class: action,
      'aria-label': `${text} ${job}`,
      'data-focus': `${action === 'trigger' ? 'trigger' : 'toggle'}:${job}`,
    },
    text,
  );
  // Not disabled while it runs: a disabled button loses the keyboard focus.
  const key = `${action}:${job}`;
  if (busy.has(key)) button.setAttribute('aria-busy', 'true');
  button.addEventListener('click', () => {
    if (busy.has(key)) return;
    busy.add(key);
    button.setAttribute('aria-busy', 'true');
    void act(action, job, body?.()).finally(() => busy.delete(key));
  });
  return button;
}
function actionButtons(job: DashboardJob, store: StoreView, body?: () => Record<string, unknown>): Child[] {
  const name = job.name;
  const toggle = !store.pauses
    ? null
    : job.paused
      ? actionButton('resume', name, 'Resume')
      : actionButton('pause', name, 'Pause', body);
  return [actionButton('trigger', name, 'Trigger', body), ' ', toggle];
}

/** Redraws `box` with `nodes`, keeping focus and horizontal scroll where they were. */
function redraw(box: HTMLElement, nodes: Child[]): void {
  const focused = (document.activeElement as HTMLElement | null)?.dataset?.focus;
  const scrolled = new Map(
    Array.from(box.querySelectorAll<HTMLElement>('[data-scroll]')).map((element) => [
      element.dataset.scroll,
      element.scrollLeft,
    ]),
  );
  box.replaceChildren(...nodes.filter((node): node is Node | string => Boolean(node)));
  for (const element of Array.from(box.querySelectorAll<HTMLElement>('[data-scroll]'))) {
    element.scrollLeft = scrolled.get(element.dataset.scroll) ?? 0;
  }
  if (focused !== undefined) {
    box.querySelector<HTMLElement>(`[data-focus="${CSS.escape(focused)}"]`)?.focus();
  }
}

function scrollingTable(label: string, head: string[], rows: HTMLTableRowElement[]): HTMLElement {
  return h(
    'div',
    { class: 'scroll', role: 'region', 'aria-label': label, tabindex: '0', 'data-scroll': label },
    h(
      'table',
      {},
      h('caption', { class: 'visually-hidden' }, label),
      h('thead', {}, h('tr', {}, ...head.map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', {}, ...rows),
    ),
  );
}

function notices(store: StoreView): HTMLElement | null {
  const lines = [...store.notes];
  if (store.error !== null) lines.unshift(`The store did not answer: ${store.error}`);
  if (lines.length === 0) return null;
  return h(
    'div',
    { class: store.error === null ? 'notice' : 'notice error' },
    ...lines.map((line) => h('p', {}, line)),
  );
}

function scheduleCell(job: DashboardJob): Child[] {
  return job.description === null
    ? [h('code', {}, job.schedule)]
    : [h('span', { class: 'desc' }, job.description), ' ', h('code', {}, job.schedule)];
}
function nextRunCell(job: DashboardJob): Child {
  if (job.nextRun !== null) return when(job.nextRun, job.timezone);
  return muted(job.enabled ? 'never' : 'disabled');
}
function lastRunCell(job: DashboardJob): Child[] {
  const last = job.lastRun;
  if (last === null) return [muted('never')];
  const link = h(
    'a',
    { href: `${jobHref(job.name)}#run-${Date.parse(last.scheduledAt)}` },
    badge(last.outcome),
  );
  const details = [
    relative(last.endedAt ?? last.scheduledAt),
    last.durationMs === null ? null : formatElapsed(last.durationMs),
    last.instance === null ? null : `on ${last.instance}`,
  ].filter((part): part is string => part !== null);
  return [link, ' ', h('span', { class: 'small' }, details.join(' · '))];
}
function pausedCell(job: DashboardJob): Child[] {
  if (job.pause === null) return [muted('no')];
  return [
    h('span', { class: 'badge paused' }, 'paused'),
    ' ',
    h(
      'span',
      { class: 'small' },
      `by ${job.pause.by}${job.pause.reason === null ? '' : `: ${job.pause.reason}`}`,
    ),
  ];
}
/** Marks a job that live instances run with different definitions (a rolling deploy, a stale instance). */
function driftBadge(job: DashboardJob): HTMLElement {
  return h(
    'span',
    { class: 'badge drift', title: `Live instances run ${job.drift?.length} definitions of this job` },
    'config drift',
  );
}
function driftCell(job: DashboardJob): Child[] {
  if (job.drift === null) return [muted('none: every live instance runs the same definition')];
  return job.drift.map((variant) =>
    h(
      'div',
      { class: 'small' },
      `${variant.instances.join(', ')}: `,
      variant.fields === null
        ? muted('definition not published yet')
        : Object.entries(variant.fields)
            .map(([field, value]) => `${field} ${JSON.stringify(value)}`)
            .join(', '),
    ),
  );
}
function leaseCell(job: DashboardJob): Child[] {
  if (job.lockKey === null) return [muted('no lock')];
  const lease = job.lease;
  if (lease === null) return [muted('free')];
  return [
    h('span', { class: 'holder' }, lease.instance ?? lease.owner),
    ' ',
    h('span', { class: 'small' }, `token ${lease.token} · expires ${relative(lease.expiresAt)}`),
  ];
}

function jobsSection(data: Overview): HTMLElement {
  const head = ['Job', 'Schedule', 'Timezone', 'Next run', 'Last run', 'Paused', 'Lease'];
  if (data.actions) head.push('Actions');
  const rows = data.jobs.map((job) => {
    const cells: Child[] = [
      h(
        'th',
        { scope: 'row' },
        h('a', { href: jobHref(job.name) }, job.name),
        !job.enabled && h('span', { class: 'tag' }, 'disabled'),
        job.drift !== null && ' ',
        job.drift !== null && driftBadge(job),
      ),
      h('td', {}, ...scheduleCell(job)),
      h('td', {}, job.timezone),
      h('td', {}, nextRunCell(job)),
      h('td', {}, ...lastRunCell(job)),
      h('td', {}, ...pausedCell(job)),
      h('td', {}, ...leaseCell(job)),
    ];
    if (data.actions) cells.push(h('td', { class: 'actions' }, ...actionButtons(job, data.store)));
    return h('tr', { 'data-job': job.name }, ...cells);
  });
  return h(
    'section',
    { 'aria-labelledby': 'jobs-title' },
    h('h2', { id: 'jobs-title' }, `Jobs (${data.jobs.length})`),
    data.jobs.length === 0 ? h('p', {}, `No jobs in ${data.config}.`) : scrollingTable('Jobs', head, rows),
  );
}

function instancesSection(data: Overview): HTMLElement {
  const title = h('h2', { id: 'instances-title' }, 'Instances');
  let body: Child;
  if (data.instances === null) {
    body = h('p', { class: 'muted' }, 'The store does not list instances.');
  } else if (data.instances.length === 0) {
    body = h('p', {}, 'No live instance: no resil run has sent a heartbeat within the last 15 s.');
  } else {
    title.textContent = `Instances (${data.instances.length})`;
    const rows = data.instances.map((instance: InstanceEntry) => {
      const off = Math.abs(instance.clockOffsetMs) > 1_000;
      const offset = `${instance.clockOffsetMs > 0 ? '+' : ''}${instance.clockOffsetMs} ms`;
      return h(
        'tr',
        {},
        h('th', { scope: 'row' }, instance.instance),
        h('td', {}, instance.host),
        h('td', {}, String(instance.pid)),
        h('td', {}, instance.version),
        h('td', {}, String(instance.jobs)),
        h(
          'td',
          { class: off ? 'warn' : undefined },
          off ? h('span', { 'aria-hidden': 'true' }, '⚠ ') : null,
          offset,
          off ? h('span', { class: 'visually-hidden' }, ' (more than 1 s off the store clock)') : null,
        ),
        h('td', {}, relative(instance.lastSeenAt)),
        h('td', {}, when(instance.startedAt, localZone)),
      );
    });
    body = scrollingTable(
      'Instances',
      ['Instance', 'Host', 'PID', 'Version', 'Jobs', 'Clock offset', 'Last heartbeat', 'Started'],
      rows,
    );
  }
  return h(
    'section',
    { 'aria-labelledby': 'instances-title' },
    title,
    body,
    h(
      'p',
      { class: 'small muted' },
      'Clock offset: the store’s clock minus the instance’s; past 1 s it is marked.',
    ),
  );
}

function renderOverview(data: Overview): void {
  document.title = 'resil dashboard';
  redraw(main, [notices(data.store), jobsSection(data), instancesSection(data)]);
}

// A job's page: the summary and the history are redrawn; the actions (with the reason typed so far) stay.
let jobBoxes: { summary: HTMLElement; actions: HTMLElement; history: HTMLElement } | undefined;
const reasonInput = h('input', {
  id: 'pause-reason',
  type: 'text',
  maxlength: String(maxReasonLength),
  autocomplete: 'off',
  'data-focus': 'reason',
});

/** `schedule`, `manual by ops@host-1: "rerun after fix"`. */
function triggerText(entry: JobHistoryEntry): string {
  const by = entry.actor === null ? '' : ` by ${entry.actor}`;
  const why = entry.outcome === 'skipped' || entry.reason === null ? '' : `: "${entry.reason}"`;
  return `${entry.trigger}${by}${why}`;
}

function historyTable(history: JobHistoryEntry[], timeZone: string): HTMLElement {
  const longest = Math.max(1, ...history.map((entry) => entry.durationMs ?? 0));
  const rows = history.map((entry) => {
    const bar = h('span', { class: `bar ${entry.outcome}` });
    bar.style.width = `${Math.max(2, (100 * (entry.durationMs ?? 0)) / longest)}%`;
    return h(
      'tr',
      { id: `run-${Date.parse(entry.scheduledAt)}` },
      h('th', { scope: 'row', class: 'nowrap' }, timeIn(entry.scheduledAt, timeZone)),
      h('td', {}, badge(entry.outcome, entry.outcome === 'skipped' ? entry.reason : null)),
      h('td', {}, entry.instance ?? '–'),
      h('td', {}, entry.token === null ? '–' : String(entry.token)),
      h('td', { class: 'nowrap' }, entry.startedAt === null ? '–' : relative(entry.startedAt)),
      h(
        'td',
        { class: 'duration' },
        entry.durationMs === null ? '–' : h('span', { class: 'track' }, bar),
        entry.durationMs === null ? null : formatElapsed(entry.durationMs),
      ),
      h('td', {}, triggerText(entry)),
      h('td', { class: 'error-text' }, entry.error ?? ''),
    );
  });
  return scrollingTable(
    'Run history',
    [`Occurrence (${timeZone})`, 'Outcome', 'Instance', 'Token', 'Started', 'Duration', 'Trigger', 'Error'],
    rows,
  );
}

function timeline(history: JobHistoryEntry[], timeZone: string): HTMLElement {
  const oldestFirst = [...history].reverse();
  const longest = Math.max(1, ...history.map((entry) => entry.durationMs ?? 0));
  const counts = new Map<string, number>();
  for (const entry of history) counts.set(entry.outcome, (counts.get(entry.outcome) ?? 0) + 1);
  const summary = [...counts].map(([outcome, count]) => `${count} ${outcome}`).join(', ');
  const marks = oldestFirst.map((entry) => {
    const label = `${timeIn(entry.scheduledAt, timeZone)}: ${entry.outcome}${entry.reason === null ? '' : ` (${entry.reason})`}${entry.durationMs === null ? '' : `, ${formatElapsed(entry.durationMs)}`}${entry.instance === null ? '' : `, ${entry.instance}`}`;
    const bar = h('span', { class: 'bar' });
    bar.style.height = entry.durationMs === null ? '' : `${Math.max(8, (100 * entry.durationMs) / longest)}%`;
    return h(
      'li',
      {},
      h(
        'a',
        {
          class: `mark ${entry.outcome}`,
          href: `#run-${Date.parse(entry.scheduledAt)}`,
          title: label,
          tabindex: '-1',
        },
        bar,
        h('span', { class: 'sym' }, symbols[entry.outcome] ?? '•'),
      ),
    );
  });
  return h(
    'ol',
    {
      class: 'timeline',
      role: 'img',
      'aria-label': `Timeline of the last ${history.length} occurrences, oldest first: ${summary}`,
    },
    ...marks,
  );
}

function renderJob(data: JobDetail): void {
  const { job } = data;
  document.title = `${job.name} · resil dashboard`;
  if (jobBoxes === undefined) {
    jobBoxes = { summary: h('div'), actions: h('div'), history: h('div') };
    main.replaceChildren(jobBoxes.summary, jobBoxes.actions, jobBoxes.history);
  }
  const row = (term: string, ...value: Child[]) => [h('dt', {}, term), h('dd', {}, ...value)];
  redraw(jobBoxes.summary, [
    h('p', {}, h('a', { href: '/' }, '← All jobs')),
    notices(data.store),
    h('h2', { id: 'job-title' }, job.name, !job.enabled && h('span', { class: 'tag' }, 'disabled')),
    h(
      'dl',
      { class: 'summary' },
      ...row('Schedule', ...scheduleCell(job)),
      ...row('Timezone', job.timezone),
      ...row('Next run', nextRunCell(job)),
      ...row('Last run', ...lastRunCell(job)),
      ...row('Paused', ...pausedCell(job)),
      ...row('Config drift', ...(job.drift === null ? [] : [driftBadge(job), ' ']), ...driftCell(job)),
      ...row('Lock', job.lockKey === null ? muted('none (lock: false)') : h('code', {}, job.lockKey)),
      ...row('Lease', ...leaseCell(job)),
      ...row(
        'Overlap',
        job.concurrency === undefined ? job.overlap : `${job.overlap}, up to ${job.concurrency} at once`,
      ),
    ),
  ]);
  if (data.actions) {
    const reasonBody = () => {
      const reason = reasonInput.value.trim();
      return reason === '' ? {} : { reason };
    };
    redraw(jobBoxes.actions, [
      h(
        'section',
        { class: 'panel', 'aria-labelledby': 'actions-title' },
        h('h3', { id: 'actions-title' }, 'Actions'),
        h('label', { for: 'pause-reason' }, 'Reason (optional, recorded with a trigger or a pause) '),
        reasonInput,
        h('div', { class: 'actions' }, ...actionButtons(job, data.store, reasonBody)),
      ),
    ]);
  }
  const failure = data.history.find((entry) => entry.outcome === 'failure');
  redraw(jobBoxes.history, [
    h(
      'section',
      { 'aria-labelledby': 'timeline-title' },
      h('h3', { id: 'timeline-title' }, 'Timeline'),
      data.history.length === 0
        ? h(
            'p',
            { class: 'muted' },
            job.lockKey === null
              ? 'No history: the runs of a lock: false job are not recorded.'
              : 'No occurrence in the run ledger yet.',
          )
        : timeline(data.history, job.timezone),
      h(
        'p',
        { class: 'legend small' },
        ...['success', 'failure', 'skipped', 'running'].map((outcome) => badge(outcome)),
        ' Bar height: duration.',
      ),
    ),
    failure === undefined
      ? null
      : h(
          'section',
          { class: 'panel failed-run', 'aria-labelledby': 'failure-title' },
          h('h3', { id: 'failure-title' }, 'Latest failure'),
          h(
            'p',
            {},
            h(
              'a',
              { href: `#run-${Date.parse(failure.scheduledAt)}` },
              timeIn(failure.scheduledAt, job.timezone),
            ),
            failure.instance === null ? '' : ` on ${failure.instance}`,
            failure.token === null ? '' : `, token ${failure.token}`,
          ),
          h('pre', {}, failure.error ?? 'no error message'),
        ),
    h(
      'section',
      { 'aria-labelledby': 'next-title' },
      h('h3', { id: 'next-title' }, `Next ${data.nextRuns.length} runs`),
      data.nextRuns.length === 0
        ? h('p', { class: 'muted' }, 'The schedule has no future occurrence.')
        : h(
            'ol',
            { class: 'next' },
            ...data.nextRuns.map((iso) =>
              h(
                'li',
                {},
                when(iso, job.timezone),
                data.shiftedRuns.includes(iso)
                  ? h('span', { class: 'muted' }, ' shifted: its local time is in the DST gap')
                  : null,
              ),
            ),
          ),
    ),
    h(
      'section',
      { 'aria-labelledby': 'history-title' },
      h('h3', { id: 'history-title' }, `History (latest ${data.history.length}, newest first)`),
      data.history.length === 0 ? null : historyTable(data.history, job.timezone),
    ),
  ]);
  if (firstRender && location.hash.length > 1)
    document.getElementById(location.hash.slice(1))?.scrollIntoView();
}

function renderUnknownJob(): void {
  document.title = 'Unknown job · resil dashboard';
  updated.textContent = '';
  redraw(main, [
    h('p', {}, h('a', { href: '/' }, '← All jobs')),
    h('h2', {}, 'Unknown job'),
    h(
      'p',
      {},
      malformedJobPath
        ? `The address names no job: “${jobName ?? ''}” is not a percent-encoded name.`
        : `The config has no job named “${jobName ?? ''}”.`,
    ),
  ]);
}

async function refresh(): Promise<void> {
  window.clearTimeout(timer);
  timer = undefined;
  if (malformedJobPath) return renderUnknownJob();
  try {
    const url = jobName === undefined ? '/api/overview' : jobPath('/api', jobName);
    const response = await fetch(url, { headers: { accept: 'application/json' } });
    if (response.status === 404 && jobName !== undefined) return renderUnknownJob();
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const data = (await response.json()) as Overview | JobDetail;
    skewMs = Date.parse(data.now) - Date.now();
    storeLine.textContent = `${data.store.name} · ${data.actions ? 'actions on' : 'read-only'} ·`;
    if ('jobs' in data) renderOverview(data);
    else renderJob(data);
    firstRender = false;
    updated.textContent = `Updated ${timeIn(data.now, localZone)}, every ${refreshMs / 1_000} s`;
    updated.className = '';
  } catch (error) {
    updated.textContent = `Cannot reach the dashboard (${(error as Error).message}): retrying every ${refreshMs / 1_000} s`;
    updated.className = 'error';
  }
  if (!document.hidden && timer === undefined) timer = window.setTimeout(refresh, refreshMs);
}

document.addEventListener('visibilitychange', () => {
  if (document.hidden) window.clearTimeout(timer);
  else void refresh();
});
void refresh();
