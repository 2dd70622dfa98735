import { describe, expect, it } from "vitest";
import { seriesSteps } from "../../protocol/console.js";
import { percentileOf, seriesBucketCount, SeriesSteps } from "./series-steps.js";

const hour = 3600_000;

describe("the per-model series", () => {
  it("reads the median and p95 of a step within a bucket's width of the true values", () => {
    let now = 1_000_000_000_000;
    const series = new SeriesSteps(() => now);
    for (let index = 1; index <= 100; index += 1) series.record({ model: "chat", at: now, latencyMs: index * 10, ttftMs: index, error: index > 95, completionTokens: 3 });
    const point = series.points("chat").at(-1);
    expect(point?.requests_per_s).toBe(10);
    expect(point?.errors_per_s).toBe(0.5);
    expect(point?.tokens_per_s).toBe(30);
    // True values: p50 500 ms, p95 950 ms; the buckets rise by √2, so within ±42 %.
    expect(point?.latency_p50_ms).toBeGreaterThan(500 / Math.SQRT2);
    expect(point?.latency_p50_ms).toBeLessThan(500 * Math.SQRT2);
    expect(point?.latency_p95_ms).toBeGreaterThan(950 / Math.SQRT2);
    expect(point?.latency_p95_ms).toBeLessThan(950 * Math.SQRT2);
    expect(point?.ttft_p50_ms).toBeLessThan(50 * Math.SQRT2);
    now += 10_000;
    expect(series.points("chat").at(-1)).toMatchObject({ requests_per_s: 0, latency_p50_ms: null, ttft_p95_ms: null });
  });

  it("answers one point per 10-second step of the last hour, oldest first, and forgets older steps", () => {
    let now = 1_000_000_000_000;
    const series = new SeriesSteps(() => now);
    series.record({ model: "chat", at: now, latencyMs: 5, ttftMs: undefined, error: false, completionTokens: 0 });
    const points = series.points("chat");
    expect(points).toHaveLength(seriesSteps);
    expect((points[1]?.t ?? 0) - (points[0]?.t ?? 0)).toBe(10_000);
    expect(points.at(-1)?.requests_per_s).toBe(0.1);
    now += hour;
    series.record({ model: "chat", at: now, latencyMs: 5, ttftMs: undefined, error: false, completionTokens: 0 });
    expect(series.points("chat").filter((point) => point.requests_per_s > 0)).toHaveLength(1);
    // A sample far outside the hour (a clock gone wrong) is not kept at all.
    series.record({ model: "chat", at: now - 2 * hour, latencyMs: 5, ttftMs: undefined, error: false, completionTokens: 0 });
    expect(series.drain().map((step) => step.start)).toEqual([Math.floor(now / 10_000) * 10_000]);
  });

  it("adds another gateway's drained steps to its own, and drops the models it is told are gone", () => {
    const now = 1_000_000_000_000;
    const remote = new SeriesSteps(() => now);
    const local = new SeriesSteps(() => now);
    remote.record({ model: "chat", at: now, latencyMs: 100, ttftMs: 20, error: false, completionTokens: 4 });
    local.record({ model: "chat", at: now, latencyMs: 100, ttftMs: 20, error: true, completionTokens: 4 });
    local.record({ model: "gone", at: now, latencyMs: 100, ttftMs: undefined, error: false, completionTokens: 0 });
    const drained = remote.drain();
    expect(drained[0]?.latency).toHaveLength(seriesBucketCount);
    expect(remote.drain()).toEqual([]);
    local.merge(drained);
    expect(local.points("chat").at(-1)).toMatchObject({ requests_per_s: 0.2, errors_per_s: 0.1, tokens_per_s: 0.8 });
    local.keepOnly(new Set(["chat"]));
    expect(local.points("gone").every((point) => point.requests_per_s === 0)).toBe(true);
    expect(local.points().at(-1)?.requests_per_s).toBe(0.2);
  });

  it("has no percentile without counts", () => {
    expect(percentileOf(new Uint32Array(seriesBucketCount), 0.5)).toBeNull();
  });
});
