import { describe, expect, it } from "vitest";
import { catalogModelOf as modelOf } from "../catalog/testing/catalog-model-of.js";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { fleetFromHardwareSpec } from "../fleet/pools.js";
import { storedFixtureFacts } from "../plan/testing/fixtures.js";
import { refusalOf } from "../../test/support/refusal.js";
import { checkContextChange } from "./check-context-change.js";
import { checkGpusChange } from "./check-gpus-change.js";

const deepSeek = storedFixtureFacts("DeepSeek-V3", "fp8", 688_586_727_753);
const fleet = fleetFromHardwareSpec(parseHardwareSpec("3x8xH100-80GB@ib0,8xH100-80GB@pcie"));
const settings = { fleet, gpuMemoryUtilization: 0.9 };
const model = (nodes: number, engine: "vllm" | "sglang" = "vllm") =>
  modelOf({ name: "dsv3", context: 8192, profiles: [{ name: "gang", engine, source: "/models/dsv3", gpu_class: "h100", gpus: 8, nodes }] });

describe("checkGpusChange on a replica over several nodes", () => {
  it("keeps the node count when only the cards change, and sets both when asked", () => {
    expect(checkGpusChange({ model: model(2), profile: undefined, gpus: 8, facts: deepSeek, ...settings }).entry.profiles?.[0]).toMatchObject({ gpus: 8, nodes: 2 });
    expect(checkGpusChange({ model: model(2), profile: undefined, gpus: 8, nodes: 3, facts: deepSeek, ...settings }).entry.profiles?.[0]).toMatchObject({ gpus: 8, nodes: 3 });
  });

  it("refuses what would need more nodes, naming the command that changes both", () => {
    const error = refusalOf(() => checkGpusChange({ model: model(2), profile: undefined, gpus: 4, facts: deepSeek, ...settings }));
    expect(error.code).toBe("does_not_fit");
    expect(error.message).toMatch(/^4 cards on each of 2 nodes would not hold dsv3\/gang at its 8192-token context: /);
    expect(error.hint).toBe("It would fit 3 nodes of 4 cards: `llmgw ctl model gpus dsv3 4 --nodes 3` changes both.");
  });

  it("names the command with --nodes for a one-node profile too, when a gang would hold it", () => {
    const error = refusalOf(() => checkGpusChange({ model: model(1), profile: undefined, gpus: 8, facts: deepSeek, ...settings }));
    expect(error.message).toMatch(/^8 cards per replica would not hold dsv3\/gang/);
    expect(error.hint).toBe("It would fit 2 nodes of 8 cards: `llmgw ctl model gpus dsv3 8 --nodes 2` changes both.");
  });

  it("refuses more nodes than one fabric has of those cards, with the most there is", () => {
    const error = refusalOf(() => checkGpusChange({ model: model(2), profile: undefined, gpus: 8, nodes: 4, facts: deepSeek, ...settings }));
    expect(error.code).toBe("cards_missing");
    expect(error.message).toBe("no fabric has 4 nodes with 8 h100 cards each for dsv3/gang: the most is 3 (h100 on ib0)");
  });

  it("applies the heads rule to SGLang's whole group of cards", () => {
    const error = refusalOf(() => checkGpusChange({ model: model(2, "sglang"), profile: undefined, gpus: 3, facts: deepSeek, ...settings }));
    expect(error.code).toBe("heads_not_divisible");
    expect(error.message).toContain("sglang cannot split dsv3 over 6 cards");
  });

  it("refuses nodes for llama.cpp by name", () => {
    const gguf = modelOf({ name: "g", profiles: [{ name: "cpp", engine: "llamacpp", source: "/models/x.gguf", gpu_class: "h100", gpus: 1 }] });
    const error = refusalOf(() => checkGpusChange({ model: gguf, profile: undefined, gpus: 1, nodes: 2, facts: deepSeek, ...settings }));
    expect(error.message).toBe("g/cpp cannot span 2 nodes: llama.cpp spans machines only through its RPC servers, which llmgw does not run; use vllm or sglang (or nodes: 1)");
  });
});

describe("checkContextChange on a replica over several nodes", () => {
  it("prices the context on the largest stage's cards, so two nodes hold what one node cannot", () => {
    expect(() => checkContextChange({ model: model(2), tokens: 32768, slots: undefined, facts: new Map([["/models/dsv3", deepSeek]]), ...settings })).not.toThrow();
  });
});
