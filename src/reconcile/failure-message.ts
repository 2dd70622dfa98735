import type { Action } from "./types.js";

/** The replica-failed event: the wait before the next start that is really in force. */
export function failureMessage(action: Extract<Action, { kind: "record-failure" }>, failures: number, waitMs: number): string {
  const next = action.anotherServes
    ? `replaced at once: another replica of ${action.model} serves`
    : `${failures} in a row; next start in ${formatWait(waitMs)}`;
  return `replica ${action.id} of ${action.model} on ${action.node} failed (${next}): ${action.reason}`;
}

/** Whole seconds as before (the reconcile test reads them); a wait under a second in tenths, never "0 s". */
function formatWait(ms: number): string {
  return ms >= 1000 || ms === 0 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`;
}
