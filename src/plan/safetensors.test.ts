import { describe, expect, it } from "vitest";
import { countWeights, isSafeShardName, parseSafetensorsHeader, safetensorsHeaderLength, shardsOfIndex } from "./safetensors.js";
import { safetensorsHeaderBytes } from "./header-only-checkpoint.js";

describe("safetensors headers", () => {
  it("read back the shapes and dtypes they were written with", () => {
    const bytes = safetensorsHeaderBytes([{ name: "a", dtype: "BF16", shape: [2, 3] }, { name: "b", dtype: "F32", shape: [4] }]);
    const length = safetensorsHeaderLength(bytes.subarray(0, 8), "x.safetensors");
    const tensors = parseSafetensorsHeader(bytes.subarray(8, 8 + length), "x.safetensors");
    expect(tensors).toEqual([{ name: "a", dtype: "BF16", shape: [2, 3] }, { name: "b", dtype: "F32", shape: [4] }]);
    expect(countWeights(tensors, undefined)).toEqual({ parameters: 10, bytes: 28, dtype: "F32" }); // the dtype holding most bytes
  });

  it("refuse an absurd header length instead of reading gigabytes", () => {
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigUint64(0, 10n ** 12n, true);
    expect(() => safetensorsHeaderLength(prefix, "x.safetensors")).toThrow(/declares a header/);
  });

  it("skip FP8 scales when counting parameters", () => {
    const tensors = [
      { name: "w.weight", dtype: "F8_E4M3", shape: [4, 4] },
      { name: "w.weight_scale", dtype: "F32", shape: [1] },
    ];
    expect(countWeights(tensors, { method: "fp8", bits: 8, quantization: "fp8" }).parameters).toBe(16);
  });
});

describe("shard names from an index", () => {
  it("stay inside the model's folder", () => {
    expect(isSafeShardName("model-00001-of-00002.safetensors")).toBe(true);
    expect(isSafeShardName("sub/model.safetensors")).toBe(true);
    for (const bad of ["../etc/passwd", "/etc/passwd", "http://evil.example/x", "a/%2e%2e/b", "c:\\\\x", ""]) {
      expect(isSafeShardName(bad), bad).toBe(false);
    }
  });

  it("make an index naming an outside shard unreadable", () => {
    expect(() => shardsOfIndex({ weight_map: { a: "../../secret" } }, "index.json")).toThrow(/outside its folder/);
  });
});
