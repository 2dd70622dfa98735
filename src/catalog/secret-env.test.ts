import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DomainError } from "../errors/domain-error.js";
import { buildCatalog } from "./build-catalog.js";
import { maskSecretEnv, resolveSecretEnv } from "./secret-env.js";
import { loadServerConfig } from "./server-config.js";

describe("secrets taken from the server's environment by reference", () => {
  const directory = mkdtempSync(path.join(tmpdir(), "llmgw-secret-env-"));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  const config = (text: string) => {
    const file = path.join(directory, "server.yaml");
    writeFileSync(file, text);
    return file;
  };
  const declared = `models:\n  - name: gated\n    profiles:\n      - engine: vllm\n        source: hf://org/gated@main\n        secret_env: { HF_TOKEN: SERVER_HF_TOKEN }\n`;

  it("resolves each engine variable from the server variable it names", () => {
    expect(resolveSecretEnv("m", { engine: "vllm", secret_env: { HF_TOKEN: "SERVER_HF_TOKEN" } }, { SERVER_HF_TOKEN: "hf_x" })).toEqual({ HF_TOKEN: "hf_x" });
    expect(maskSecretEnv({ HF_TOKEN: "hf_x", LEVEL: "INFO" }, { HF_TOKEN: "SERVER_HF_TOKEN" })).toEqual({ HF_TOKEN: "$SERVER_HF_TOKEN", LEVEL: "INFO" });
  });

  it("refuses to start a server whose declared profile names a variable it lacks, naming the variable", () => {
    let error: unknown;
    try {
      loadServerConfig(config(declared), {}, {});
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: "config_invalid", message: expect.stringContaining("secret_env HF_TOKEN reads $SERVER_HF_TOKEN from the server's environment, and the server has no SERVER_HF_TOKEN set") });
    expect(() => loadServerConfig(config(declared), {}, { SERVER_HF_TOKEN: "" })).toThrow(/has no SERVER_HF_TOKEN set/);
  });

  it("starts with the variable set, keeping only the names in the catalog", () => {
    const loaded = loadServerConfig(config(declared), {}, { SERVER_HF_TOKEN: "hf_value" });
    const model = buildCatalog(loaded.declared).models[0];
    expect(model?.profiles[0]?.secret_env).toEqual({ HF_TOKEN: "SERVER_HF_TOKEN" });
    expect(JSON.stringify(loaded)).not.toContain("hf_value");
  });

  it("refuses a variable set both in env and in secret_env", () => {
    const both = declared.replace("secret_env:", "env: { HF_TOKEN: plain }\n        secret_env:");
    expect(() => loadServerConfig(config(both), {}, { SERVER_HF_TOKEN: "x" })).toThrow(/HF_TOKEN is set in both env and secret_env/);
  });
});
