import { describe, expect, it } from "vitest";
import { planSource } from "./plan-source.js";

describe("planSource", () => {
  it("refuses a utilization that is not a fraction, before reading anything", async () => {
    await expect(planSource("/nonexistent", { gpus: "1xH100-80GB", gpuMemoryUtilization: 90, hubEndpoint: "http://127.0.0.1:9" })).rejects.toThrow(
      "GPU memory utilization 90 is not a fraction of a card",
    );
  });
});
