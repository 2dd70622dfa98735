import type { DesiredModel } from "./types.js";

export interface ModelLoad {
  /** Replicas that serve now. */
  readonly ready: number;
  /** Replicas kept (serving or on their way), the ones a scale-down would remove. */
  readonly live: number;
  /** Requests running and waiting over its ready replicas. */
  readonly inFlight: number;
}

/**
 * How many replicas a model should have now:
 * - 0/0: none, it is in the catalog only;
 * - min > 0: at least min;
 * - min 0, max > 0 (on demand): one while a request came within idle_timeout, one is in flight, or
 *   the replica a demand started is still on its way up (a load longer than idle_timeout would
 *   otherwise be stopped before it ever served; idle time counts from when it is ready);
 * - with a target: enough that each ready replica carries at most target requests, up to max;
 *   a replica added under load stays until the load has been low for the cool-down.
 * `busy` says the load asked for at least what it has (the cool-down starts again).
 */
export function desiredCount(model: DesiredModel, load: ModelLoad, nowMs: number, cooldownMs: number): { count: number; busy: boolean } {
  if (model.max === 0) return { count: 0, busy: false };
  const demanded = load.inFlight > 0 || startingForDemand(load) || (model.demandAtMs !== undefined && nowMs - model.demandAtMs < model.idleTimeoutMs);
  const base = model.min > 0 ? model.min : demanded ? 1 : 0;
  if (model.targetInFlight === undefined || load.ready === 0 || base === 0) return { count: Math.min(base, model.max), busy: false };
  const wanted = Math.min(model.max, Math.max(base, Math.ceil(load.inFlight / model.targetInFlight)));
  if (wanted > load.live) return { count: Math.min(model.max, load.live + 1), busy: true };
  if (wanted === load.live) return { count: wanted, busy: true };
  // Fewer would do: keep what runs until the load has stayed low for the cool-down.
  const coolingSince = model.busyAtMs ?? nowMs;
  if (nowMs - coolingSince < cooldownMs) return { count: Math.max(base, load.live), busy: false };
  return { count: Math.max(base, load.live - 1), busy: false };
}

/** Replicas on their way up and none serving yet: what a demand started is let finish starting. */
export function startingForDemand(load: ModelLoad): boolean {
  return load.ready === 0 && load.live > 0;
}
