import { readFileSync } from 'node:fs';

/** `&`, `<`, `>`, `"` and `'` as entities, for text and attribute values. */
function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (character) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[character]!,
  );
}

/**
 * The one HTML page (`/` and `/jobs/<name>`): a shell the script fills. With actions on it carries
 * the process's token in a `<meta>`, which only a page of the dashboard's own origin can read.
 */
export function pageHtml(options: { token?: string }): string {
  const token =
    options.token === undefined ? '' : `\n<meta name="resil-token" content="${escapeHtml(options.token)}">`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">${token}
<title>resil dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard.css">
<script src="/dashboard.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
<h1><a href="/">resil dashboard</a></h1>
<p class="small"><span id="store"></span> <span id="updated">Loading…</span></p>
</header>
<p id="message" role="status" aria-live="polite"></p>
<main id="main" tabindex="-1"><noscript>This page needs JavaScript. The same data is at <a href="/api/overview">/api/overview</a>.</noscript></main>
</body>
</html>
`;
}

let script: string | undefined;

/**
 * The page's script: page-script.ts as `npm run build` bundles it for the browser, beside the
 * CLI's entry point (dist/cli/dashboard.js; the dashboard's code runs from dist/chunks/ or
 * dist/cli/).
 */
export function pageScript(): string {
  script ??= readFileSync(new URL('../cli/dashboard.js', import.meta.url), 'utf8');
  return script;
}

/** Light and dark by `prefers-color-scheme`; sizes in rem, so it reads at 200 % zoom. */
export const pageStyle = `:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --panel: #f6f8fa; --link: #0550ae;
  --ok: #116329; --ok-bg: #dafbe1; --fail: #a40e26; --fail-bg: #ffebe9; --skip: #7d4e00; --skip-bg: #fff8c5;
  --run: #0550ae; --run-bg: #ddf4ff; --focus: #0969da;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --panel: #151b23; --link: #6cb6ff;
    --ok: #56d364; --ok-bg: #0f2d1a; --fail: #ff7b72; --fail-bg: #3c1618; --skip: #e3b341; --skip-bg: #341a00;
    --run: #6cb6ff; --run-bg: #0c2d6b; --focus: #4493f8;
  }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 90rem; padding: 0 1rem 2rem; background: var(--bg); color: var(--fg);
  font: 1rem/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
a { color: var(--link); }
:focus-visible { outline: 0.1875rem solid var(--focus); outline-offset: 0.125rem; }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 1.5rem; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.375rem; margin: 0.75rem 0; }
h1 a { color: inherit; text-decoration: none; }
h2 { font-size: 1.25rem; margin: 1.5rem 0 0.5rem; }
h3 { font-size: 1.0625rem; margin: 1.25rem 0 0.5rem; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.875rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
.small { font-size: 0.875rem; }
.muted, .abs { color: var(--muted); }
.abs { display: block; font-size: 0.8125rem; white-space: nowrap; }
td code { white-space: nowrap; }
.rel { font-weight: 600; }
.desc { display: block; }
.skip { position: absolute; left: -100vw; }
.skip:focus { left: 1rem; top: 0.5rem; background: var(--bg); padding: 0.25rem 0.5rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
#message { min-height: 1.5rem; margin: 0.5rem 0; }
.error, #message.error { color: var(--fail); }
.notice { border: 1px solid var(--line); border-left: 0.25rem solid var(--skip); background: var(--panel);
  padding: 0.25rem 0.75rem; margin: 0.75rem 0; }
.notice.error { border-left-color: var(--fail); }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 0.375rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 0.5rem 0.625rem; border-bottom: 1px solid var(--line); }
thead th { background: var(--panel); font-size: 0.875rem; white-space: nowrap; }
tbody tr:last-child > * { border-bottom: 0; }
tbody th { font-weight: 600; }
tr:target { background: var(--run-bg); }
.badge { display: inline-block; border-radius: 1rem; padding: 0 0.5rem; font-size: 0.8125rem; font-weight: 600;
  white-space: nowrap; border: 1px solid currentColor; }
.badge.success { color: var(--ok); background: var(--ok-bg); }
.badge.failure { color: var(--fail); background: var(--fail-bg); }
.badge.skipped, .badge.paused, .badge.drift { color: var(--skip); background: var(--skip-bg); }
.badge.running, .badge.queued { color: var(--run); background: var(--run-bg); }
.tag { margin-left: 0.5rem; font-size: 0.75rem; color: var(--muted); border: 1px solid var(--line); border-radius: 0.25rem; padding: 0 0.25rem; }
.warn { color: var(--fail); font-weight: 600; }
.actions { white-space: nowrap; }
button { font: inherit; font-size: 0.875rem; padding: 0.25rem 0.75rem; border-radius: 0.375rem; cursor: pointer;
  border: 1px solid var(--line); background: var(--panel); color: var(--fg); }
button:hover { border-color: var(--muted); }
button[aria-busy="true"] { opacity: 0.6; cursor: progress; }
button.pause { color: var(--skip); }
input[type="text"] { font: inherit; padding: 0.25rem 0.5rem; margin: 0 0.5rem 0.5rem 0; width: min(24rem, 100%);
  border: 1px solid var(--muted); border-radius: 0.375rem; background: var(--bg); color: var(--fg); }
.panel { border: 1px solid var(--line); border-radius: 0.375rem; padding: 0 1rem 1rem; background: var(--panel); }
.failed-run { border-left: 0.25rem solid var(--fail); margin-top: 1rem; }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: 0.375rem 1.25rem; margin: 0.5rem 0 1rem; }
dl.summary dt { color: var(--muted); }
dl.summary dd { margin: 0; }
.timeline { list-style: none; display: flex; align-items: flex-end; gap: 0.1875rem; height: 6rem; margin: 0;
  padding: 0.5rem; overflow-x: auto; border: 1px solid var(--line); border-radius: 0.375rem; }
.timeline li { height: 100%; display: flex; }
.mark { display: flex; flex-direction: column; justify-content: flex-end; align-items: center; width: 1.125rem;
  height: 100%; text-decoration: none; font-size: 0.75rem; line-height: 1; }
.mark .bar { display: block; width: 100%; min-height: 0.1875rem; border-radius: 0.125rem 0.125rem 0 0; background: currentColor; }
.mark .sym { padding-top: 0.125rem; }
.mark.success { color: var(--ok); } .mark.failure { color: var(--fail); }
.mark.skipped { color: var(--skip); } .mark.running, .mark.queued { color: var(--run); }
.legend .badge { margin-right: 0.375rem; }
.duration, .nowrap { white-space: nowrap; }
.track { display: inline-block; width: 5rem; height: 0.5rem; margin-right: 0.5rem; background: var(--panel);
  border: 1px solid var(--line); vertical-align: middle; }
.track .bar { display: block; height: 100%; background: var(--ok); }
.track .bar.failure { background: var(--fail); }
.error-text { color: var(--fail); overflow-wrap: anywhere; min-width: 12rem; }
.next { padding-left: 1.5rem; }
.next li { margin: 0.125rem 0; }
.next .abs { display: inline; margin-left: 0.5rem; }
`;
