import { describe, expect, it } from "vitest";
import { catalogModelOf as modelOf } from "../catalog/testing/catalog-model-of.js";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { fleetFromHardwareSpec } from "../fleet/pools.js";
import { fixtureFacts } from "../plan/testing/fixtures.js";
import { refusalOf } from "../../test/support/refusal.js";
import { checkGpusChange } from "./check-gpus-change.js";

/** The least a ComfyUI profile is: a workflow and where a prompt goes into it. */
const oneNodeWorkflow = { outputs: "images" as const, inputs: { prompt: "6.inputs.text" }, workflow: { "6": { class_type: "CLIPTextEncode", inputs: { text: "" } } } };

const qwen = fixtureFacts("Qwen2.5-7B-Instruct");
const llama70 = fixtureFacts("Llama-3.3-70B-Instruct");
const fleet = fleetFromHardwareSpec(parseHardwareSpec("2xH100-80GB@nvl0,8xL40S-48GB@pcie"));
const settings = { fleet, gpuMemoryUtilization: 0.9 };

const qwenModel = modelOf({
  name: "qwen",
  context: 8192,
  profiles: [
    { name: "l40s", engine: "vllm", source: "/models/qwen", gpu_class: "l40s", gpus: 1 },
    { name: "gguf", engine: "llamacpp", source: "/models/qwen.gguf", gpu_class: "l40s", gpus: 1 },
  ],
});

describe("checkGpusChange", () => {
  it("sets the cards of the one profile on cards, or of the one named", () => {
    expect(checkGpusChange({ model: qwenModel, profile: "l40s", gpus: 4, facts: qwen, ...settings }).entry.profiles?.map((profile) => profile.gpus)).toEqual([4, 1]);
    expect(checkGpusChange({ model: qwenModel, profile: "gguf", gpus: 3, facts: qwen, ...settings }).entry.profiles?.map((profile) => profile.gpus)).toEqual([1, 3]);
    const embedding = modelOf({
      name: "embed",
      profiles: [
        { name: "cpu", engine: "llamacpp", source: "/models/e.gguf", gpus: 0 },
        { name: "l40s", engine: "vllm", source: "/models/e", gpu_class: "l40s", gpus: 1 },
      ],
    });
    const changed = checkGpusChange({ model: embedding, profile: undefined, gpus: 2, facts: qwen, ...settings });
    expect(changed.profile).toBe("l40s");
    expect(changed.entry.profiles?.map((profile) => profile.gpus)).toEqual([0, 2]);
  });

  it("asks which profile when several run on cards, and changes a CPU profile only when it is named", () => {
    const several = refusalOf(() => checkGpusChange({ model: qwenModel, profile: undefined, gpus: 2, facts: qwen, ...settings }));
    expect(several.code).toBe("profile_ambiguous");
    expect(several.message).toContain("l40s, gguf");
    expect(several.hint).toContain("--profile");
    const cpuOnly = modelOf({ name: "small", profiles: [{ name: "cpu", engine: "llamacpp", source: "/models/s.gguf", gpus: 0 }] });
    const unnamed = refusalOf(() => checkGpusChange({ model: cpuOnly, profile: undefined, gpus: 3, facts: qwen, ...settings }));
    expect(unnamed.code).toBe("profile_ambiguous");
    expect(unnamed.message).toContain("runs on no cards");
    expect(unnamed.hint).toContain("--profile cpu");
    expect(checkGpusChange({ model: cpuOnly, profile: "cpu", gpus: 1, facts: qwen, ...settings }).profile).toBe("cpu");
  });

  it("refuses a tensor-parallel count that does not divide the heads, naming them and the counts that do", () => {
    const error = refusalOf(() => checkGpusChange({ model: qwenModel, profile: "l40s", gpus: 3, facts: qwen, ...settings }));
    expect(error.code).toBe("heads_not_divisible");
    expect(error.message).toBe("vllm cannot split qwen over 3 cards: 3 cards do not divide the 28 attention heads (it has 28 attention heads and 4 KV heads)");
    expect(error.hint).toBe("Tensor parallel needs a count that divides both; on these nodes that is 1, 2, 4.");
    // llama.cpp splits layers: three cards are fine.
    expect(checkGpusChange({ model: qwenModel, profile: "gguf", gpus: 3, facts: qwen, ...settings }).profile).toBe("gguf");
  });

  it("refuses a count no node of the profile's class has, naming the largest node and its cards", () => {
    const onH100 = modelOf({ name: "h", profiles: [{ engine: "sglang", source: "/models/qwen", gpu_class: "h100" }] });
    const error = refusalOf(() => checkGpusChange({ model: onH100, profile: undefined, gpus: 4, facts: qwen, ...settings }));
    expect(error.code).toBe("cards_missing");
    expect(error.message).toBe("no node has 4 h100 cards on one fabric for h/sglang: the largest, node-1, has 2 (h100 on nvl0)");
    const onA100 = modelOf({ name: "a", profiles: [{ engine: "vllm", source: "/models/qwen", gpu_class: "a100" }] });
    expect(refusalOf(() => checkGpusChange({ model: onA100, profile: undefined, gpus: 2, facts: qwen, ...settings })).message).toBe(
      "no node of the fleet has a100 cards, so a/vllm cannot be checked or placed on 2",
    );
  });

  it("refuses cards too small for the weights and the context, with what each card would need and has", () => {
    const big = modelOf({ name: "big", context: 16384, profiles: [{ name: "pair", engine: "trtllm", source: "/models/llama70", gpu_class: "h100", gpus: 2 }] });
    const error = refusalOf(() => checkGpusChange({ model: big, profile: undefined, gpus: 1, facts: llama70, ...settings }));
    expect(error.code).toBe("does_not_fit");
    expect(error.message).toMatch(
      /^1 card per replica would not hold big\/pair at its 16384-token context: profile pair \(trtllm, 1 card\): its card would need \d+\.\d GiB \(\d+\.\d GiB weights, .* KV cache for 16384 tokens\); the largest h100 card has 72\.0 GiB usable \(0\.90 of 80\.0 GiB\): \d+\.\d GiB short$/,
    );
  });

  it("refuses more than one card for ComfyUI, and no card for a GPU-only engine", () => {
    const image = modelOf({ name: "sdxl", profiles: [{ engine: "comfyui", source: "/models/sdxl", gpu_class: "l40s", gpus: 1, comfy: oneNodeWorkflow }] });
    const error = refusalOf(() => checkGpusChange({ model: image, profile: undefined, gpus: 2, facts: undefined, ...settings }));
    expect(error.code).toBe("invalid_profile");
    expect(error.message).toBe("sdxl/comfyui runs comfyui, which uses one card: it cannot take 2");
    expect(refusalOf(() => checkGpusChange({ model: qwenModel, profile: "l40s", gpus: 0, facts: qwen, ...settings })).message).toBe(
      "qwen/l40s runs vllm, which runs on GPUs only: it needs 1 or more cards",
    );
  });

  it("refuses a profile the model does not have, listing those it has", () => {
    const error = refusalOf(() => checkGpusChange({ model: qwenModel, profile: "h200", gpus: 2, facts: qwen, ...settings }));
    expect(error.code).toBe("profile_not_found");
    expect(error.hint).toBe("Its profiles are: l40s, gguf.");
  });
});
