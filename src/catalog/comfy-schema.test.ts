import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { buildCatalog } from "./build-catalog.js";
import { parseModelFile } from "./model-file.js";
import type { ModelEntry } from "./schema.js";

const workflow = {
  "4": { class_type: "CheckpointLoaderSimple", inputs: { ckpt_name: "sd_xl_turbo_1.0_fp16.safetensors" } },
  "5": { class_type: "EmptyLatentImage", inputs: { width: 512, height: 512, batch_size: 1 } },
  "6": { class_type: "CLIPTextEncode", inputs: { text: "a cat", clip: ["4", 1] } },
  "3": { class_type: "KSampler", inputs: { seed: 1, steps: 1, model: ["4", 0], positive: ["6", 0], negative: ["6", 0], latent_image: ["5", 0] } },
  "8": { class_type: "VAEDecode", inputs: { samples: ["3", 0], vae: ["4", 2] } },
  "9": { class_type: "SaveImage", inputs: { filename_prefix: "x", images: ["8", 0] } },
};

const entryText = (comfy: Record<string, unknown>, engine = "comfyui") =>
  JSON.stringify({ name: "turbo", profiles: [{ engine, source: "hf://stabilityai/sdxl-turbo@main", comfy: { workflow, outputs: "images", inputs: { prompt: "6.inputs.text" }, ...comfy } }] });

/** The refusal's message and details, as the CLI prints them. */
function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    const { message, details } = error as { message: string; details?: { where: string; message: string }[] };
    return [message, ...(details ?? []).map((detail) => `${detail.where}: ${detail.message}`)].join("\n");
  }
  throw new Error("expected a refusal");
}

const build = (entry: ModelEntry) => buildCatalog([{ entry, source: "runtime", place: "runtime model turbo" }]);

describe("a ComfyUI profile at the door", () => {
  it("takes a workflow whose input paths name real nodes and fields", () => {
    const entry = parseModelFile(entryText({ inputs: { prompt: "6.inputs.text", width: "5.inputs.width", height: "5.inputs.height", seed: "3.inputs.seed", batch: "5.inputs.batch_size" } }), "turbo.yaml");
    expect(build(entry).models[0]?.profiles[0]?.comfy?.inputs.width).toBe("5.inputs.width");
  });

  it("refuses an input path to a node the workflow does not have, naming the nodes it has", () => {
    const message = refusal(() => parseModelFile(entryText({ inputs: { prompt: "7.inputs.text" } }), "turbo.yaml"));
    expect(message).toContain("profiles[0].comfy.inputs.prompt");
    expect(message).toContain('"7.inputs.text" names node 7, which the workflow does not have (its nodes: 3, 4, 5, 6, 8, 9)');
  });

  it("refuses an input path to a field the node does not have, naming its fields", () => {
    const message = refusal(() => parseModelFile(entryText({ inputs: { prompt: "6.inputs.txt" } }), "turbo.yaml"));
    expect(message).toContain('node 6 (CLIPTextEncode) has no input "txt" (its inputs: text, clip)');
  });

  it("refuses an input path that points at a link rather than a value", () => {
    const message = refusal(() => parseModelFile(entryText({ inputs: { prompt: "6.inputs.clip" } }), "turbo.yaml"));
    expect(message).toContain("is a link from another node");
  });

  it("refuses a link to a node that is not in the workflow", () => {
    const broken = { ...workflow, "8": { class_type: "VAEDecode", inputs: { samples: ["3", 0], vae: ["40", 2] } } };
    const message = refusal(() => parseModelFile(entryText({ workflow: broken }), "turbo.yaml"));
    expect(message).toContain("profiles[0].comfy.workflow.8.inputs.vae");
    expect(message).toContain("links to node 40");
  });

  it("asks an images workflow for its prompt and a mesh workflow for its image", () => {
    expect(refusal(() => parseModelFile(entryText({ inputs: {} }), "turbo.yaml"))).toContain("required for an images workflow");
    expect(refusal(() => parseModelFile(entryText({ inputs: {}, outputs: "mesh" }), "turbo.yaml"))).toContain("required for a mesh workflow");
  });

  it("refuses a file folder that climbs out of models/ and a custom node without a revision", () => {
    expect(refusal(() => parseModelFile(entryText({ files: [{ source: "hf://a/b@main/x.safetensors", to: "../../etc/" }] }), "turbo.yaml"))).toContain("a folder under ComfyUI's models/");
    expect(refusal(() => parseModelFile(entryText({ custom_nodes: [{ source: "https://github.com/a/b.git" }] }), "turbo.yaml"))).toContain("revision");
  });

  it("refuses a comfy block on another engine, and a comfyui profile without one", () => {
    expect(refusal(() => build(parseModelFile(entryText({}, "vllm"), "turbo.yaml")))).toContain("runs on engine comfyui only");
    expect(refusal(() => build({ name: "bare", profiles: [{ engine: "comfyui", source: "hf://a/b@main" }] }))).toContain("required for engine comfyui");
  });

  it("refuses a second ComfyUI profile with another workflow", () => {
    const first = JSON.parse(entryText({})) as { profiles: Record<string, unknown>[] };
    const second = JSON.parse(entryText({ inputs: { prompt: "6.inputs.text", seed: "3.inputs.seed" } })) as { profiles: Record<string, unknown>[] };
    const entry = parseModelFile(JSON.stringify({ name: "turbo", profiles: [first.profiles[0], { ...second.profiles[0], name: "cpu", gpus: 0 }] }), "turbo.yaml");
    expect(refusal(() => build(entry))).toContain("must be those of profile 0");
  });
});

describe("the ComfyUI presets", () => {
  it.each(["flux1-schnell", "hunyuan3d-2"])("%s is a valid model entry with a licence and its task", (name) => {
    const preset = parse(readFileSync(new URL(`../../presets/${name}.yaml`, import.meta.url), "utf8")) as { preset: { licence: { name: string; url: string }; tasks: string[] }; model: unknown };
    const entry = parseModelFile(JSON.stringify(preset.model), `${name}.yaml`);
    const model = build(entry).models[0];
    expect(preset.preset.licence.url).toMatch(/^https:\/\//);
    const outputs = model?.profiles[0]?.comfy?.outputs;
    expect(preset.preset.tasks).toEqual([outputs === "images" ? "images" : "image-to-3d"]);
  });
});
