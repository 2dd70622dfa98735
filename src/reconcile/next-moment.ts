import type { ReconcileSettings } from "../catalog/index.js";
import type { Desired, Observed } from "./types.js";

/**
 * The next moment at which time alone changes what `diff` decides: a
 * withdrawn replica's delay ends (it is stopped), a pending one is due to be
 * sent again, an on-demand model's idle time runs out, a scale-down's
 * cool-down ends, a backoff expires. Undefined when no such moment is ahead.
 *
 * A pass is woken by changes (a catalog change, a heartbeat that changed a
 * replica's report); these moments come with no change at all, so the
 * reconciler sets its own timer for the earliest, rather than leaving them
 * to the interval pass (seconds late) or to heartbeats waking it for
 * nothing (which, at hundreds of nodes, was a full pass every 250 ms).
 *
 * Every comparison `diff` and `desiredCount` make against the clock has its
 * moment here; one added there without its moment here would be acted on
 * only at the interval pass, late but never lost.
 */
export function nextMoment(desired: Desired, observed: Observed, settings: ReconcileSettings): number | undefined {
  const now = observed.nowMs;
  let earliest: number | undefined;
  const consider = (moment: number | undefined) => {
    if (moment === undefined || Number.isNaN(moment) || moment <= now) return;
    if (earliest === undefined || moment < earliest) earliest = moment;
  };
  for (const replica of observed.replicas) {
    if (replica.state === "failed" || replica.state === "stopped") continue;
    if (replica.withdrawnAtMs !== undefined) {
      if (replica.state !== "draining" && replica.state !== "lost") consider(replica.withdrawnAtMs + settings.withdrawDelayMs);
      continue;
    }
    if (replica.state === "pending") consider(replica.placedAtMs + settings.resumeAfterMs);
  }
  for (const model of desired.models) {
    if (model.max === 0) continue;
    if (model.min === 0 && model.demandAtMs !== undefined) consider(model.demandAtMs + model.idleTimeoutMs);
    if (model.targetInFlight !== undefined && model.busyAtMs !== undefined) consider(model.busyAtMs + settings.scaleDownCooldownMs);
    consider(model.backoffUntilMs);
  }
  return earliest;
}
