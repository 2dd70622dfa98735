import { Counter, Registry } from "prom-client";
import { describe, expect, it, vi } from "vitest";
import { metricsRequestSchema, type MetricsAnswer } from "../../protocol/gateway-worker-messages.js";
import { ClusterMetrics } from "./cluster-metrics.js";
import type { PrimaryChannel } from "./ipc-shared-limits.js";

/** A worker's channel to a primary that answers each metrics request with `answer(id)`. */
function channelTo(answer: (id: number) => MetricsAnswer | undefined, connected = true): PrimaryChannel {
  let listener: (message: unknown) => void = () => undefined;
  return {
    send(message) {
      const request = metricsRequestSchema.parse(message);
      const reply = answer(request.id);
      if (reply) setImmediate(() => listener(reply));
    },
    onMessage(receive) {
      listener = receive;
    },
    connected,
  };
}

const local = () => {
  const registry = new Registry();
  new Counter({ name: "llmgw_test_total", help: "a counter", registers: [registry] }).inc(3);
  return registry;
};

describe("a gateway worker's /metrics, answered for all workers by the primary", () => {
  it("is the text the primary gathered, not the worker's own share", async () => {
    const metrics = new ClusterMetrics(channelTo((id) => ({ type: "llmgw-metrics", id, text: "llmgw_test_total 6\n", error: null })), local());
    expect(await metrics.text()).toBe("llmgw_test_total 6\n");
  });

  it("fails, saying why, when the primary could not gather the workers' metrics", async () => {
    const metrics = new ClusterMetrics(channelTo((id) => ({ type: "llmgw-metrics", id, text: null, error: "Operation timed out." })), local());
    await expect(metrics.text()).rejects.toThrow("the gateway's primary could not gather the workers' metrics: Operation timed out.");
  });

  it("gives up, saying so, when the primary never answers", async () => {
    vi.useFakeTimers();
    try {
      const metrics = new ClusterMetrics(channelTo(() => undefined), local());
      const text = metrics.text();
      const failed = expect(text).rejects.toThrow("the gateway's primary did not gather the workers' metrics within 6 s");
      await vi.advanceTimersByTimeAsync(6000);
      await failed;
    } finally {
      vi.useRealTimers();
    }
  });

  it("fails at once when the primary is gone", async () => {
    const metrics = new ClusterMetrics(channelTo(() => undefined, false), local());
    await expect(metrics.text()).rejects.toThrow("the gateway's primary process is gone");
  });
});
