import { describe, expect, it } from "vitest";
import { architectureFromConfig, slidingLayerCount, trainedContextFromConfig } from "./architecture.js";
import { architectureFromGguf } from "./gguf-architecture.js";
import { isDomainError } from "../errors/domain-error.js";
import { fixtureArchitecture, fixtureConfig } from "./testing/fixtures.js";

describe("architectureFromConfig", () => {
  it("reads a grouped-query model's heads, KV heads and derived head_dim", () => {
    const llama = fixtureArchitecture("Llama-3.3-70B-Instruct");
    expect(llama).toMatchObject({ layers: 80, hiddenSize: 8192, attentionHeads: 64, kvHeads: 8, headDim: 128, vocabSize: 128256, tiedEmbeddings: false });
  });

  it("reads GPT-2's names, as NomicBert's config keeps them: n_embd, n_head, n_layer, n_inner, n_positions", () => {
    const nomic = architectureFromConfig({ model_type: "nomic_bert", n_embd: 768, n_head: 12, n_layer: 12, n_inner: 3072, n_positions: 2048, vocab_size: 30528 }, "config.json");
    expect(nomic).toMatchObject({ layers: 12, hiddenSize: 768, attentionHeads: 12, kvHeads: 12, headDim: 64, intermediateSize: 3072, trainedContext: 2048 });
  });

  it("takes head_dim from the config when it is not hidden_size / heads (gemma-2: 256, not 224)", () => {
    expect(fixtureArchitecture("gemma-2-9b-it").headDim).toBe(256);
  });

  it("knows gemma-2 alternates sliding and global layers and ties its embeddings", () => {
    const gemma = fixtureArchitecture("gemma-2-9b-it");
    expect(gemma.slidingWindow).toEqual({ window: 4096, slidingLayers: 21 });
    expect(gemma.tiedEmbeddings).toBe(true);
  });

  it("ignores Qwen's sliding_window while use_sliding_window is false", () => {
    expect(fixtureArchitecture("Qwen2.5-7B-Instruct").slidingWindow).toBeUndefined();
  });

  it("applies Mistral's sliding_window to every layer when set", () => {
    const config = { ...(fixtureConfig("Mistral-7B-v0.3") as object), sliding_window: 4096 };
    expect(architectureFromConfig(config, "config.json").slidingWindow).toEqual({ window: 4096, slidingLayers: 32 });
  });

  it("reads MoE experts from num_local_experts, num_experts and n_routed_experts", () => {
    expect(fixtureArchitecture("Mixtral-8x7B-v0.1").moe).toMatchObject({ experts: 8, expertsPerToken: 2, expertIntermediateSize: 14336 });
    expect(fixtureArchitecture("Qwen3-30B-A3B").moe).toMatchObject({ experts: 128, expertsPerToken: 8, expertIntermediateSize: 768 });
    expect(fixtureArchitecture("DeepSeek-V2-Lite").moe).toMatchObject({ experts: 64, sharedExperts: 2, sharedIntermediateSize: 2816, denseLayers: 1 });
  });

  it("reads MLA's latent rank and rope head size", () => {
    expect(fixtureArchitecture("DeepSeek-V2-Lite").mla).toEqual({ kvLoraRank: 512, qkRopeHeadDim: 64, qkNopeHeadDim: 128, vHeadDim: 128, qLoraRank: undefined });
  });

  it("extends the trained context by YaRN's factor over the original length", () => {
    expect(fixtureArchitecture("DeepSeek-V2-Lite").trainedContext).toBe(163840);
    expect(trainedContextFromConfig(32768, { type: "yarn", factor: 4, original_max_position_embeddings: 32768 })).toBe(131072);
  });

  it("does not extend llama3 rope scaling, whose max_position_embeddings is already the extended length", () => {
    expect(fixtureArchitecture("Llama-3.1-8B").trainedContext).toBe(131072);
  });

  it("names the missing field and the file", () => {
    const config = { ...(fixtureConfig("Llama-3.1-8B") as Record<string, unknown>) };
    delete config.num_hidden_layers;
    try {
      architectureFromConfig(config, "config.json of Org/Model@main");
      expect.unreachable();
    } catch (error) {
      expect(isDomainError(error) && error.code).toBe("architecture_field_missing");
      expect((error as Error).message).toContain("num_hidden_layers");
      expect((error as Error).message).toContain("config.json of Org/Model@main");
    }
  });

  it("uses the text_config of a multimodal config", () => {
    const config = { model_type: "llava", text_config: fixtureConfig("Mistral-7B-v0.3") };
    expect(architectureFromConfig(config, "config.json").layers).toBe(32);
  });
});

describe("sliding-window layers by family", () => {
  it("counts Gemma-3's one global layer in six, from config.json and from GGUF alike", () => {
    expect(slidingLayerCount("gemma3", 62, undefined)).toBe(52);
    expect(slidingLayerCount("gemma3_text", 62, 6)).toBe(52);
    expect(slidingLayerCount("gemma2", 42, undefined)).toBe(21);
    expect(slidingLayerCount("mistral", 32, undefined)).toBe(32);
    // gemma-3-27b as its GGUF states it: 62 layers, a 1024-token window, 128k trained.
    const gguf = architectureFromGguf(
      {
        "general.architecture": "gemma3",
        "gemma3.block_count": 62,
        "gemma3.embedding_length": 5376,
        "gemma3.attention.head_count": 32,
        "gemma3.attention.head_count_kv": 16,
        "gemma3.attention.key_length": 128,
        "gemma3.context_length": 131072,
        "gemma3.attention.sliding_window": 1024,
        "gemma3.vocab_size": 262208,
      },
      [],
      "gemma-3-27b-it-Q4_K_M.gguf",
    );
    expect(gguf.slidingWindow).toEqual({ window: 1024, slidingLayers: 52 });
  });
});
