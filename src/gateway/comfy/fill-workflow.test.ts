import { describe, expect, it } from "vitest";
import type { RoutingComfy } from "../../protocol/routing-table.js";
import { fillWorkflow } from "./fill-workflow.js";

const comfy: RoutingComfy = {
  outputs: "images",
  inputs: { prompt: "6.inputs.text", seed: "3.inputs.seed" },
  workflow: {
    "3": { class_type: "KSampler", inputs: { seed: 0, steps: 4 } },
    "6": { class_type: "CLIPTextEncode", inputs: { text: "default", clip: ["4", 1] } },
  },
};

describe("filling a workflow", () => {
  it("writes each value where the catalog says, on a copy", () => {
    const filled = fillWorkflow("m", comfy, { prompt: "a cat", seed: 9 });
    expect(filled["6"]?.inputs["text"]).toBe("a cat");
    expect(filled["3"]?.inputs["seed"]).toBe(9);
    expect(comfy.workflow["6"]?.inputs["text"]).toBe("default");
  });

  it("refuses a size the workflow has no place for rather than ignoring it", () => {
    expect(() => fillWorkflow("m", comfy, { prompt: "a cat", width: 512, height: 512 })).toThrow(/model m's workflow has no place for a size/);
  });

  it("leaves out a seed the workflow does not take: the gateway chose it, the client did not", () => {
    const noSeed: RoutingComfy = { ...comfy, inputs: { prompt: "6.inputs.text" } };
    expect(fillWorkflow("m", noSeed, { prompt: "a cat", seed: 3 })["3"]?.inputs["seed"]).toBe(0);
  });
});
