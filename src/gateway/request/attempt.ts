import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { RoutingTarget } from "../routing/routing-snapshot.js";
import { ProxiedAnswer, type ProxiedOutcome } from "../upstream/proxied-answer.js";
import type { ReportedUsage } from "../upstream/usage-in.js";
import type { GatewayEndpoint, GatewayExchange } from "../wire/gateway-exchange.js";
import type { GatewayBody } from "../wire/prompt-text.js";
import type { UpstreamRoute } from "./upstream-routes.js";

/** One model's try at a request: the same for the model asked for and each fallback. */
export interface Attempt {
  readonly target: RoutingTarget;
  readonly body: GatewayBody;
  readonly answeringName: string;
  readonly payload: Buffer;
  readonly stream: boolean;
  readonly dropUsageEvent: boolean;
  readonly arrivedAt: number;
  readonly exchange: GatewayExchange;
  readonly endpoint: GatewayEndpoint;
  /** Counts the answer's usage before its last byte; the answer ends once the promise settles. */
  readonly record: (outcome: ProxiedOutcome) => Promise<void> | void;
}

export interface Outcome {
  readonly status: number;
  readonly model: string;
  readonly usage: ReportedUsage | undefined;
  readonly failed: boolean;
  /** From arrival to a streamed answer's first byte, in ms; undefined when the answer was not streamed. */
  readonly ttftMs?: number | undefined;
}

/** Sends the body to one upstream and passes its answer through as it arrives (see ProxiedAnswer for what is retried). */
export async function forward(attempt: Attempt, route: UpstreamRoute, metrics: GatewayMetrics, closing: () => boolean): Promise<Outcome> {
  const { exchange } = attempt;
  const headers: Record<string, string> = { "content-type": "application/json", "x-request-id": exchange.id };
  if (route.authorization !== undefined) headers.authorization = route.authorization;
  if (attempt.stream) headers.accept = "text/event-stream";
  metrics.addedTime.observe((performance.now() - attempt.arrivedAt) / 1000);
  const modelMetrics = metrics.model(attempt.target.model.name);
  modelMetrics.inFlight += 1;
  let ttftMs: number | undefined;
  // The first byte goes to the Prometheus histogram and, for the console's series, to this request's outcome.
  const timeToFirstToken = {
    observe(seconds: number) {
      modelMetrics.timeToFirstToken.observe(seconds);
      ttftMs = seconds * 1000;
    },
  };
  try {
    const answer = new ProxiedAnswer({
      response: exchange.response,
      requestId: exchange.id,
      answeringName: attempt.answeringName,
      dropUsageEvent: attempt.dropUsageEvent,
      dialect: attempt.endpoint === "messages" ? "anthropic" : "openai",
      upstream: route.upstream,
      refusedKeyVariable: route.refusedKeyVariable,
      closing,
      arrivedAt: attempt.arrivedAt,
      timeToFirstToken,
      log: exchange.log,
      beforeLastByte: attempt.record,
    });
    route.pool.dispatch({ method: "POST", path: route.paths[attempt.endpoint], headers, body: attempt.payload }, answer);
    const outcome = await answer.done;
    return { status: outcome.status, usage: outcome.usage, failed: outcome.failed, model: attempt.answeringName, ttftMs };
  } finally {
    modelMetrics.inFlight -= 1;
  }
}
