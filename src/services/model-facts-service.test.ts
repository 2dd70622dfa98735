import { describe, expect, it } from "vitest";
import { resolveModel } from "../catalog/catalog-model.js";
import { modelEntrySchema } from "../catalog/schema.js";
import type { ModelFacts } from "../plan/model-facts.js";
import { fixtureFacts } from "../plan/testing/fixtures.js";
import { ModelFactsService } from "./model-facts-service.js";

const qwen = fixtureFacts("Qwen2.5-7B-Instruct");
const source = "hf://Qwen/Qwen2.5-7B-Instruct@main";
const chat = resolveModel(modelEntrySchema.parse({ name: "chat", context: 8192, profiles: [{ name: "h100", engine: "vllm", source, gpu_class: "h100" }] }), "runtime");
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A reader that answers the fixture's figures while `up`, and fails as an unreachable hub does when not. */
function hub() {
  const state = { up: true, reads: 0 };
  const read = async (asked: string): Promise<ModelFacts> => {
    state.reads += 1;
    if (!state.up) throw new Error(`${asked}: fetch failed (connect ECONNREFUSED 127.0.0.1:9)`);
    return qwen;
  };
  return { state, read };
}

describe("ModelFactsService", () => {
  it("prices a model's cards once its files were read in the background, and tells who listens when they are in", async () => {
    const { read } = hub();
    const background: string[] = [];
    const facts = new ModelFactsService({ read: async () => Promise.reject(new Error("not the background reader")), readInBackground: async (asked) => (background.push(asked), await read(asked)) });
    let woken = 0;
    facts.whenFactsRead(() => (woken += 1));
    // Not read yet: placement checks card counts and classes only, and a read is queued.
    expect(facts.demandProfiles(chat)[0]?.bytesPerCard).toBeUndefined();
    expect(facts.cardBytes(chat, "h100")).toBeUndefined();
    await settle();
    await settle();
    expect(background).toEqual([source]);
    expect(woken).toBe(1);
    const bytes = facts.cardBytes(chat, "h100");
    expect(bytes?.weights).toBeGreaterThan(14e9);
    expect(bytes?.kvTokens).toBe(8192);
    expect(facts.demandProfiles(chat)[0]?.bytesPerCard).toBe(bytes?.total);
    expect(facts.cardBytes(chat, "no-such-profile")).toBeUndefined();
  });
});
