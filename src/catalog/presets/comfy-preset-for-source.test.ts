import { describe, expect, it } from "vitest";
import { comfyPresetForSource } from "./comfy-preset-for-source.js";
import { loadPresets } from "./load-presets.js";
import { shippedPresetsFolder } from "./shipped-presets.js";

const presets = loadPresets(shippedPresetsFolder);

describe("the ComfyUI preset a source belongs to", () => {
  it("is found from the preset's origin, its profile's source or a file of its workflow, however the source is written", () => {
    expect(comfyPresetForSource("Comfy-Org/flux1-schnell", presets)?.name).toBe("flux1-schnell");
    expect(comfyPresetForSource("hf://comfy-org/FLUX1-schnell@main", presets)?.name).toBe("flux1-schnell");
    expect(comfyPresetForSource("black-forest-labs/FLUX.1-schnell", presets)?.name).toBe("flux1-schnell");
    expect(comfyPresetForSource("tencent/Hunyuan3D-2", presets)?.name).toBe("hunyuan3d-2");
    expect(comfyPresetForSource("hf://tencent/Hunyuan3D-2@main/hunyuan3d-dit-v2-0/model.fp16.safetensors", presets)?.name).toBe("hunyuan3d-2");
  });

  it("is none for a text model's repository, a URL, a path or a source that does not parse", () => {
    expect(comfyPresetForSource("Qwen/Qwen2.5-7B-Instruct", presets)).toBeUndefined();
    expect(comfyPresetForSource("https://example.com/models/flux1-schnell/", presets)).toBeUndefined();
    expect(comfyPresetForSource("./Comfy-Org/flux1-schnell", presets)).toBeUndefined();
    expect(comfyPresetForSource("ftp://example.com/model", presets)).toBeUndefined();
  });
});
