import { AggregatorRegistry, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LeanHistogram } from "./lean-histogram.js";

const bounds = [0.005, 0.01, 0.1, 1];
const observations: [string, number][] = [
  ["chat", 0.001],
  ["chat", 0.005],
  ["chat", 0.0051],
  ["chat", 0.5],
  ["chat", 30],
  ["embed", 0.01],
  ["embed", 1],
];

function both(): { lean: Registry; reference: Registry } {
  const lean = new Registry();
  const reference = new Registry();
  const ours = new LeanHistogram("latency_seconds", "how long", "model", bounds, lean);
  const theirs = new Histogram({ name: "latency_seconds", help: "how long", labelNames: ["model"] as const, buckets: bounds, registers: [reference] });
  for (const [model, value] of observations) {
    ours.series(model).observe(value);
    theirs.observe({ model }, value);
  }
  return { lean, reference };
}

describe("LeanHistogram", () => {
  it("reads in a registry exactly as prom-client's own Histogram does for the same observations, bucket edges included", async () => {
    const { lean, reference } = both();
    expect(await lean.metrics()).toBe(await reference.metrics());
  });

  it("adds up across a gateway's workers as prom-client's own does", async () => {
    const first = both();
    const second = both();
    const ours = AggregatorRegistry.aggregate([await first.lean.getMetricsAsJSON(), await second.lean.getMetricsAsJSON()]);
    const theirs = AggregatorRegistry.aggregate([await first.reference.getMetricsAsJSON(), await second.reference.getMetricsAsJSON()]);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).toContain('latency_seconds_count{model="chat"} 10');
  });
});
