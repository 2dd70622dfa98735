import type { ArmCounts } from "../protocol/index.js";

export interface CanaryGate {
  readonly maxErrorRate: number | null;
  readonly maxP95Ms: number | null;
  readonly minRequests: number;
  readonly windowMs: number;
}

export type CanaryVerdict = { readonly decision: "hold"; readonly reason: string } | { readonly decision: "promote" | "abort"; readonly reason: string };

function percent(rate: number): string {
  return `${(rate * 100).toFixed(1)}%`;
}

/**
 * What a canary's gate says of its numbers over the gate's window, pure:
 * - hold while fewer than min_requests were counted: a handful of requests
 *   says nothing either way, and an abort on one unlucky error would throw
 *   away a good revision;
 * - abort once enough were counted and the error rate or p95 is over its
 *   limit (back to stable at once: every further request on a bad canary is
 *   a failed request for someone);
 * - promote once it has run for the whole window and held, with at least
 *   min_requests in the window.
 */
export function canaryVerdict(gate: CanaryGate, canary: ArmCounts, runningForMs: number): CanaryVerdict {
  const counted = `${canary.errors} errors in ${canary.requests} requests${canary.p95_ms === null ? "" : `, p95 ${canary.p95_ms} ms`}`;
  if (canary.requests < gate.minRequests) return { decision: "hold", reason: `${canary.requests} of the ${gate.minRequests} requests the gate needs` };
  const errorRate = canary.errors / canary.requests;
  if (gate.maxErrorRate !== null && errorRate > gate.maxErrorRate) {
    return { decision: "abort", reason: `error rate ${percent(errorRate)} over the gate's ${percent(gate.maxErrorRate)} (${counted})` };
  }
  if (gate.maxP95Ms !== null && canary.p95_ms !== null && canary.p95_ms > gate.maxP95Ms) {
    return { decision: "abort", reason: `p95 latency ${canary.p95_ms} ms over the gate's ${gate.maxP95Ms} ms (${counted})` };
  }
  if (runningForMs < gate.windowMs) return { decision: "hold", reason: `holding (${counted}); promoted after ${Math.round(gate.windowMs / 1000)} s` };
  return { decision: "promote", reason: `held over ${Math.round(gate.windowMs / 1000)} s: ${counted}` };
}
