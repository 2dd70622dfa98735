import { describe, expect, it } from "vitest";
import { flagValue, loadsAdaptersAtRuntime, runtimeAdapterEndpoints } from "./runtime-adapters.js";

describe("runtime adapter loading", () => {
  it("loads into vLLM started with adapters, which the driver starts with runtime updating on", () => {
    expect(loadsAdaptersAtRuntime("vllm", { adapters: 1, args: [] })).toBe(true);
    expect(loadsAdaptersAtRuntime("vllm", { adapters: 0, args: [] })).toBe(false);
  });

  it("loads into SGLang only when its LoRA buffers have a stated rank", () => {
    expect(loadsAdaptersAtRuntime("sglang", { adapters: 1, args: [] })).toBe(false);
    expect(loadsAdaptersAtRuntime("sglang", { adapters: 1, args: ["--max-lora-rank", "32"] })).toBe(true);
    expect(loadsAdaptersAtRuntime("sglang", { adapters: 0, args: ["--enable-lora", "--max-lora-rank=32"] })).toBe(true);
  });

  it("never loads into llama-server, which takes adapters at start only", () => {
    expect(loadsAdaptersAtRuntime("llamacpp", { adapters: 2, args: [] })).toBe(false);
    expect(runtimeAdapterEndpoints("llamacpp")).toBeUndefined();
  });

  it("asks each engine at its own path", () => {
    expect(runtimeAdapterEndpoints("vllm")?.load("sql", "/w/sql")).toEqual({ path: "/v1/load_lora_adapter", body: { lora_name: "sql", lora_path: "/w/sql" } });
    expect(runtimeAdapterEndpoints("sglang")?.unload("sql")).toEqual({ path: "/unload_lora_adapter", body: { lora_name: "sql" } });
  });

  it("reads the last value a flag is given, in either form", () => {
    expect(flagValue(["--max-lora-rank", "16", "--max-lora-rank=32"], "--max-lora-rank")).toBe("32");
    expect(flagValue(["--enable-lora"], "--max-lora-rank")).toBeUndefined();
  });
});
