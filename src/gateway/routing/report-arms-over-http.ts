import { request } from "undici";
import { ArmReporter, gatewayReportId } from "./arm-reporter.js";
import type { ArmStats } from "./arm-stats.js";
import type { GatewayLog } from "../wire/gateway-exchange.js";

/** A standalone gateway's per-arm counts, sent to the server (POST /api/v1/gateway/arms) every few seconds and at shutdown. */
export function reportArmsOverHttp(stats: ArmStats, server: string, token: string, log: GatewayLog): ArmReporter {
  const gateway = gatewayReportId();
  const url = new URL("/api/v1/gateway/arms", server);
  const reporter = new ArmReporter(
    stats,
    async (slots) => {
      const answer = await request(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ gateway, slots }),
      });
      await answer.body.dump();
      if (answer.statusCode >= 300) throw new Error(`the server answered ${answer.statusCode}`);
    },
    (error) => log.warn({ error: (error as Error).message }, "arm-counts-unreported: sent again with the next report"),
  );
  reporter.start();
  return reporter;
}
