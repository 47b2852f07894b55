/**
 * The longest reason an operator may give for a run (`resil jobs run --reason`, `jobs backfill
 * --reason`) and in the dashboard (the reason of a trigger or a pause: its API and its page's
 * field). The dashboard page's script imports it too, so this file imports nothing.
 */
export const maxReasonLength = 500;
