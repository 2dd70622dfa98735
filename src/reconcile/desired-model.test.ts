import { describe, expect, it } from "vitest";
import { catalogModelOf } from "../catalog/testing/catalog-model-of.js";
import { desiredModel } from "./desired-model.js";

describe("desiredModel", () => {
  const model = catalogModelOf({ name: "big", profiles: [{ name: "default", engine: "vllm", gpus: 8, source: "hf://org/big@main" }] });

  it("waits for a read of the model's files under way, so it is not placed by card count alone", () => {
    const asked: string[] = [];
    const facts = { get: (source: string) => {
        asked.push(source);
        return undefined;
      }, reading: (source: string) => source === "hf://org/big@main" };
    expect(desiredModel(model, undefined, facts, undefined).factsPending).toBe(true);
    expect(asked).toContain("hf://org/big@main");
  });

  it("places by count a model whose files cannot be read: no read is under way", () => {
    expect(desiredModel(model, undefined, { get: () => undefined, reading: () => false }, undefined).factsPending).toBe(false);
  });
});
