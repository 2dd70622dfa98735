import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import type { Replica } from "./replica-record.js";
import type { ReplicaSupervisorOptions } from "./supervisor-options.js";

/** How the agent reaches its own engines and reads their load from their metrics. */
export class EngineProbes {
  constructor(private readonly options: Pick<ReplicaSupervisorOptions, "engineHost" | "driverFor" | "drainTimeoutMs" | "healthPollMs">) {}

  /** Where this agent reaches its own engines: a wildcard listen address is reached on loopback. */
  get probeHost(): string {
    const host = this.options.engineHost ?? "127.0.0.1";
    if (host === "0.0.0.0" || host === "::" || host === "") return "127.0.0.1";
    return host.includes(":") ? `[${host}]` : host;
  }

  /** The engine's running and waiting requests; undefined when its metrics do not answer within a second. */
  async readLoad(replica: Replica): Promise<Replica["load"]> {
    try {
      const response = await request(`http://127.0.0.1:${replica.port ?? 0}${replica.metricsPath ?? "/metrics"}`, { signal: AbortSignal.timeout(1000) });
      const text = await response.body.text();
      const metrics = response.statusCode === 200 ? this.options.driverFor(replica.spec.engine).parseMetrics(text) : undefined;
      return metrics?.requestsRunning !== undefined ? { running: metrics.requestsRunning, waiting: metrics.requestsWaiting ?? 0 } : undefined;
    } catch {
      return undefined;
    }
  }

  /** Waits until the engine reports nothing running or waiting, for at most the drain timeout. */
  async waitDrained(replica: Replica, closing: () => boolean): Promise<void> {
    const driver = this.options.driverFor(replica.spec.engine);
    const deadline = Date.now() + this.options.drainTimeoutMs;
    while (Date.now() < deadline && !closing() && replica.exit === undefined) {
      try {
        const response = await request(`http://${this.probeHost}:${replica.port ?? 0}${replica.metricsPath ?? "/metrics"}`, { signal: AbortSignal.timeout(2000) });
        const text = await response.body.text();
        if (response.statusCode === 200) {
          const metrics = driver.parseMetrics(text);
          if ((metrics.requestsRunning ?? 0) + (metrics.requestsWaiting ?? 0) === 0 && metrics.requestsRunning !== undefined) return;
        }
      } catch {
        // unreadable metrics: keep waiting until the deadline rather than cut requests short
      }
      await sleep(Math.max(100, this.options.healthPollMs));
    }
  }
}
