import { describe, expect, it } from "vitest";
import { gatewayGoals, renderGatewayGoals, type GoalInputs } from "./gateway-goals.js";

const fixed = (side: string, stream: boolean, rounds: number[], rate = 2000) => ({ side, stream, rate, round_p99_ms: rounds });
const saturated = (side: string, stream: boolean, requestsPerSecond: number, cpu: number, user?: number) => ({
  side,
  stream,
  result: { requestsPerSecond },
  cpu_us_per_request: cpu,
  ...(user === undefined ? {} : { user_cpu_us_per_request: user }),
});

const run: GoalInputs = {
  settings: { rates: [500, 2000] },
  fixed_rate: [
    // At 500/s llmgw is far off: the verdict reads the highest rate only.
    fixed("direct", false, [1, 1, 1], 500),
    fixed("llmgw", false, [9, 9, 9], 500),
    fixed("direct", false, [2.0, 2.5, 3.0]),
    fixed("llmgw", false, [2.5, 3.2, 3.9]),
    fixed("direct", true, [2.0, 2.0, 2.0]),
    fixed("llmgw", true, [2.5, 4.0, 2.2]),
  ],
  saturation: [
    saturated("nginx", false, 20_000, 25, 6),
    saturated("llmgw", false, 20_000, 30, 14),
    saturated("node-pipe", false, 22_000, 20),
    saturated("nginx", true, 20_000, 25),
    saturated("llmgw", true, 19_000, 31),
  ],
};

describe("the gateway bench's goals", () => {
  const rows = gatewayGoals(run);
  const row = (start: string) => rows.find((candidate) => candidate.figure.startsWith(start));

  it("holds the added p99 to its goal round by round, against the same round of the backend called directly", () => {
    expect(row("added p99 at 2,000 requests/s, JSON")).toMatchObject({ measured: "+0.50, +0.70, +0.90 ms", meets: true });
    // One round over the goal fails it, though the rounds together would look fine.
    expect(row("added p99 at 2,000 requests/s, streams")).toMatchObject({ measured: "+0.50, +2.00, +0.20 ms", meets: false });
  });

  it("compares one process's throughput and CPU with nginx's one worker, at the edges of the goals", () => {
    expect(row("one llmgw process: throughput × nginx's one worker, JSON")).toMatchObject({ measured: "1.00×", meets: true });
    // The part outside the kernel is said beside it where both sides measured it (here JSON; streams did not).
    expect(row("one llmgw process: CPU per request × nginx's, JSON")).toMatchObject({ measured: "1.20× (30 µs against 25; outside the kernel 14 against 6)", meets: true });
    expect(row("one llmgw process: CPU per request × nginx's, streams")?.measured).toBe("1.24× (31 µs against 25)");
    expect(row("one llmgw process: throughput × nginx's one worker, streams")).toMatchObject({ measured: "0.95×", meets: false });
    expect(row("one llmgw process: CPU per request × nginx's, streams")?.meets).toBe(false);
  });

  it("shows node's floor without a verdict, and says when a side it needs was not measured", () => {
    expect(row("node's floor (node-pipe: bytes piped, nothing parsed): throughput × nginx's one worker, JSON")).toMatchObject({ measured: "1.10×", meets: undefined });
    expect(row("node's floor (node-pipe: bytes piped, nothing parsed): CPU per request × nginx's, streams")).toMatchObject({ measured: expect.stringContaining("not measured"), meets: undefined });
    const withoutLlmgw = gatewayGoals({ ...run, fixed_rate: run.fixed_rate.filter((entry) => entry.side !== "llmgw") });
    expect(withoutLlmgw.find((candidate) => candidate.figure.startsWith("added p99 at 2,000 requests/s, JSON"))).toMatchObject({ meets: undefined });
    expect(renderGatewayGoals(run).join("\n")).toContain("| added p99 at 2,000 requests/s, streams, each round | < 1 ms in every round | +0.50, +2.00, +0.20 ms | **no** |");
  });
});
