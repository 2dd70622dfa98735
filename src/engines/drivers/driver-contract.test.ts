import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { gpuOnlyEngines, singleCardEngines } from "../../catalog/schema.js";
import type { EngineDriver } from "../driver.js";
import { engineDrivers } from "./index.js";
import { testLaunchInput } from "./test-launch-input.js";

/** The placements a driver must accept: its engine's card counts, and the CPU where it runs there. */
function placementsFor(driver: EngineDriver): number[][] {
  const placements: number[][] = [[0], [5]];
  if (!singleCardEngines.includes(driver.engine)) placements.push([0, 1], [4, 5, 6, 7]);
  if (!gpuOnlyEngines.includes(driver.engine)) placements.push([]);
  return placements;
}

const extraArgs = ["--operator-flag", "operator value"];

// One suite, every driver. A new driver gets these checks for free.
describe.each(engineDrivers.map((driver) => [driver.engine, driver] as const))("driver contract: %s", (_engine, driver) => {
  for (const cards of placementsFor(driver)) {
    describe(`on cards [${cards.join(",")}]`, () => {
      const launch = driver.build(
        testLaunchInput({ cards, port: 40123, extraArgs, extraEnv: { CUDA_VISIBLE_DEVICES: "9", OPERATOR_VARIABLE: "1" } }),
      );

      it("starts the program it says it needs", () => {
        expect(launch.argv[0]).toBe(driver.program);
      });

      it("always gives the port", () => {
        const index = launch.argv.indexOf("--port");
        expect(index).toBeGreaterThan(0);
        expect(launch.argv[index + 1]).toBe("40123");
      });

      it("binds to 127.0.0.1 only", () => {
        const flag = launch.argv.includes("--listen") ? "--listen" : "--host";
        expect(launch.argv[launch.argv.indexOf(flag) + 1]).toBe("127.0.0.1");
        expect(launch.argv).not.toContain("0.0.0.0");
      });

      it("sees exactly the placement's cards, whatever the profile's environment says", () => {
        expect(launch.env["CUDA_VISIBLE_DEVICES"]).toBe(cards.join(","));
        expect(launch.env["OPERATOR_VARIABLE"]).toBe("1");
      });

      it("puts the profile's extra args last, so an operator can override a generated flag", () => {
        expect(launch.argv.slice(-extraArgs.length)).toEqual(extraArgs);
      });

      it("probes health and metrics at absolute paths", () => {
        expect(launch.healthPath).toMatch(/^\//);
        expect(launch.metricsPath).toMatch(/^\//);
        // Gateways read the metrics from the driver alone, with no launch at hand.
        expect(launch.metricsPath).toBe(driver.metricsPath);
      });
    });
  }

  it("reads nothing, and does not throw, from an empty body", () => {
    expect(driver.parseMetrics("")).toEqual({
      requestsRunning: undefined,
      requestsWaiting: undefined,
      kvCacheUsage: undefined,
      promptTokensTotal: undefined,
      generationTokensTotal: undefined,
    });
  });

  it("tolerates any garbage in its metrics text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        const metrics = driver.parseMetrics(text);
        for (const value of Object.values(metrics)) {
          expect(value === undefined || Number.isFinite(value)).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("keeps the lines it reads when others around them are broken", () => {
    const broken = ["{{{ not metrics", "vllm:num_requests_running{unclosed 3", "sglang:num_running_reqs NaN", "\u0000\u0001", "llamacpp:requests_processing two"];
    const metrics = driver.parseMetrics(broken.join("\n"));
    expect(metrics.requestsRunning).toBeUndefined();
  });
});
