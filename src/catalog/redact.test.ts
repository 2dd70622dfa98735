import { describe, expect, it } from "vitest";
import { isSecretName, redactArgs, redactEntry, redactUrl } from "./redact.js";

describe("masking secrets on the way out", () => {
  it("masks URL passwords and secret query parameters, keeping the rest", () => {
    expect(redactUrl("https://robot:s3cret@mirror.example/m/")).toBe("https://robot:***@mirror.example/m/");
    expect(redactUrl("https://s3.example/m.gguf?X-Amz-Credential=AKIA1&X-Amz-Signature=abc&part=2")).toBe(
      "https://s3.example/m.gguf?X-Amz-Credential=***&X-Amz-Signature=***&part=2",
    );
    expect(redactUrl("/models/qwen")).toBe("/models/qwen");
  });

  it("tells secret names by their words, not by substrings", () => {
    for (const name of ["HF_TOKEN", "--api-key", "PGPASSWORD", "OPENAI_API_KEY", "X-Amz-Signature", "--hf-token", "APIKEY"]) expect(isSecretName(name), name).toBe(true);
    for (const name of ["--tokenizer", "TOKENIZERS_PARALLELISM", "--max-num-batched-tokens", "VLLM_LOGGING_LEVEL", "--keep-alive"]) expect(isSecretName(name), name).toBe(false);
  });

  it("masks the values of secret-looking flags in both spellings", () => {
    expect(redactArgs(["--api-key", "sk-live-1", "--hf-token=hf_x", "--max-model-len", "8192", "--enable-prefix-caching"])).toEqual([
      "--api-key",
      "***",
      "--hf-token=***",
      "--max-model-len",
      "8192",
      "--enable-prefix-caching",
    ]);
  });

  it("masks a whole entry: env, args, sources, origin and external base URL", () => {
    const shown = JSON.stringify(
      redactEntry({
        name: "m",
        origin: "https://u:p1@hub.example/m",
        adapters: [{ name: "a", source: "https://u:p2@mirror/a/" }],
        profiles: [{ engine: "vllm", source: "https://u:p3@mirror/m/", env: { HF_TOKEN: "p4", LEVEL: "INFO" }, args: ["--api-key", "p5"] }],
      }),
    );
    for (const secret of ["p1", "p2", "p3", "p4", "p5"]) expect(shown).not.toContain(`"${secret}"`);
    for (const secret of [":p1@", ":p2@", ":p3@"]) expect(shown).not.toContain(secret);
    expect(shown).toContain('"LEVEL":"INFO"');
  });
});
