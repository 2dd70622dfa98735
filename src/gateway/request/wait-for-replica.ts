import type { RoutingModel } from "../../protocol/index.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { RoutingSnapshot } from "../routing/routing-snapshot.js";
import type { RoutingState } from "../routing/routing-state.js";
import type { V1Response } from "../wire/v1-response.js";
import { RetryLater } from "../wire/retry-later.js";

/** Seconds a client is told to wait when a model is still loading: a GPU engine takes tens of seconds to a few minutes. */
export const loadingRetryAfterSeconds = 30;

export interface ReplicaQueue {
  readonly state: RoutingState;
  readonly metrics: GatewayMetrics;
  readonly reportDemand: (model: string) => void;
  /** Requests that may wait per model for its first replica; one more is answered 429 at once. */
  readonly maxQueue: number;
  readonly closing: AbortSignal;
}

/** Placement refused the model while the request waited: the model as the table has it now, with the reason in `unavailable`. */
export interface RefusedWhileWaiting {
  readonly refused: RoutingModel;
}

/**
 * The table to choose the model's replicas from: the one in force when it
 * has a ready replica; otherwise demand is reported (the control plane starts
 * an on-demand model) and the request waits for the first one, within the
 * model's deadline and the queue's bound. "no-replica" when none came in
 * time; the refused model when placement refused it meanwhile (the demand
 * this request reported is often what made placement try, and fail).
 */
export async function snapshotWithReplica(queue: ReplicaQueue, model: RoutingModel, isFallback: boolean, response: V1Response): Promise<RoutingSnapshot | "no-replica" | RefusedWhileWaiting> {
  const snapshot = queue.state.current;
  if (snapshot.hasReadyReplica(model.name)) return snapshot;
  queue.reportDemand(model.name);
  // A fallback is taken only when it can answer now: the request has already waited for the model it asked for.
  if (isFallback) return "no-replica";
  if (queue.state.waiting(model.name) >= queue.maxQueue) {
    throw new RetryLater(
      "queue_full",
      `${queue.maxQueue} requests already wait for model ${model.name} to load`,
      "Retry after the Retry-After seconds; the model is starting.",
      loadingRetryAfterSeconds,
    );
  }
  queue.metrics.queued.inc({ model: model.name });
  const clientGone = new AbortController();
  const onClose = () => clientGone.abort();
  response.once("close", onClose);
  try {
    const ready = await queue.state.waitForReady(model.name, model.queue_timeout_ms, AbortSignal.any([clientGone.signal, queue.closing]));
    if (queue.closing.aborted) throw shuttingDown();
    if (!ready) return "no-replica";
    const refused = ready.hasReadyReplica(model.name) ? undefined : ready.refusal(model.name);
    return refused === undefined ? ready : { refused: ready.model(model.name) ?? { ...model, unavailable: refused } };
  } finally {
    queue.metrics.queued.dec({ model: model.name });
    response.removeListener("close", onClose);
  }
}

export function shuttingDown(): RetryLater {
  return new RetryLater("gateway_shutting_down", "this gateway is shutting down", "Send the request to another gateway, or again in a moment.", 1);
}
