import { request } from "undici";
import type { GatewayLog } from "../wire/gateway-exchange.js";
import { throttleDemand } from "./throttle-demand.js";

/**
 * A standalone gateway's demand reports: POST /api/v1/models/NAME/demand on
 * the server, which tells its reconciler to start an on-demand model. Sent
 * without waiting; a failure is logged once per model and the request keeps
 * waiting for a replica all the same (another gateway, or the server's own,
 * may have reported it).
 */
export function reportDemandOverHttp(server: string, token: string, log: GatewayLog): (model: string) => void {
  return throttleDemand((model) => {
    const url = new URL(`/api/v1/models/${encodeURIComponent(model)}/demand`, server);
    void request(url, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" })
      .then(async (answer) => {
        await answer.body.dump();
        if (answer.statusCode >= 300) log.warn({ model, status: answer.statusCode }, "demand-not-accepted: the server did not take the demand report");
      })
      .catch((error: unknown) => log.warn({ model, error: (error as Error).message }, "demand-unreported: the server could not be reached"));
  });
}
