import { request } from "undici";
import type { GatewayLog } from "../wire/gateway-exchange.js";
import type { SeriesSteps } from "./series-steps.js";

/** How often a standalone gateway sends its series to the server: a chart point is 10 s, so it is never more than half a step late. */
const reportEveryMs = 5000;

/**
 * A standalone gateway's per-model series, sent to the server
 * (POST /api/v1/gateway/series) every few seconds and at shutdown. What
 * could not be sent is added back, and goes with the next report; older than
 * the hour the series keeps, it is dropped there.
 */
export function reportSeriesOverHttp(series: SeriesSteps, server: string, token: string, log: GatewayLog): { stop(): Promise<void> } {
  const url = new URL("/api/v1/gateway/series", server);
  let sending: Promise<void> = Promise.resolve();
  const send = async () => {
    const steps = series.drain();
    if (steps.length === 0) return;
    try {
      const answer = await request(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ steps }),
      });
      await answer.body.dump();
      if (answer.statusCode >= 300) throw new Error(`the server answered ${answer.statusCode}`);
    } catch (error) {
      series.merge(steps);
      log.warn({ error: (error as Error).message }, "series-unreported: sent again with the next report");
    }
  };
  const timer = setInterval(() => {
    sending = sending.then(send);
  }, reportEveryMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await sending;
      await send();
    },
  };
}
