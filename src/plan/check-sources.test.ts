import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelEntry } from "../catalog/schema.js";
import { checkEntrySources } from "./check-sources.js";
import { checkpointTensors, ggufHeaderBytes, syntheticGguf, writeBytes, writeSyntheticCheckpoint } from "./header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "./testing/fixtures.js";
import { startHubServer, type HubServer } from "../hub/local-hub.js";

let workspace: string;
let mirror: HubServer;
let silent: Server;
let silentUrl: string;
const login = "robot:s3cret";

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "llmgw-check-"));
  await writeSyntheticCheckpoint(join(workspace, "qwen"), fixtureConfig("Qwen2.5-7B-Instruct"), checkpointTensors(fixtureArchitecture("Qwen2.5-7B-Instruct")), 2);
  await writeBytes(join(workspace, "gguf", "llama-3.1-8b-Q4_K_M.gguf"), syntheticGguf(fixtureArchitecture("Llama-3.1-8B"), "Q4_K_M", 15));
  await writeBytes(
    join(workspace, "gguf", "sql-lora.gguf"),
    ggufHeaderBytes({ "general.architecture": "llama", "general.type": "adapter", "adapter.type": "lora" }, [{ name: "blk.0.attn_q.weight.lora_a", dimensions: [4096, 16], type: "F16" }]),
  );
  await writeFile(join(workspace, "gguf", "error-page.gguf"), "<html>mirror error</html>");
  await mkdir(join(workspace, "readme-only"), { recursive: true });
  await writeFile(join(workspace, "readme-only", "README.md"), "weights coming soon");
  await mkdir(join(workspace, "peft"), { recursive: true });
  await writeFile(join(workspace, "peft", "adapter_config.json"), JSON.stringify({ peft_type: "LORA", r: 8, base_model_name_or_path: "Qwen/Qwen2.5-7B-Instruct" }));
  mirror = await startHubServer({ repositories: {}, mirrorRoot: workspace, token: "unused", basicLogin: login });
  // Accepts connections and never answers: a mirror behind a hung proxy.
  silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
});

afterAll(async () => {
  silent.closeAllConnections();
  await new Promise((resolve) => silent.close(resolve));
  await mirror.close();
  await rm(workspace, { recursive: true, force: true });
});

const at = (path: string) => `${mirror.url.replace("http://", `http://${login}@`)}/mirror/${path}`;
const entry = (profiles: ModelEntry["profiles"], adapters?: ModelEntry["adapters"]): ModelEntry => ({ name: "m", profiles, ...(adapters ? { adapters } : {}) });

describe("the source check before a model is stored", () => {
  it("says how large each source is, for a mirror folder, a GGUF URL and a PEFT adapter", async () => {
    const checked = await checkEntrySources(
      entry([{ engine: "vllm", source: at("qwen/") }, { engine: "llamacpp", source: at("gguf/llama-3.1-8b-Q4_K_M.gguf") }], [{ name: "m-sql", source: join(workspace, "peft") }]),
      {},
    );
    expect(checked.map((check) => check.where)).toEqual(["profiles[0].source", "profiles[1].source", "adapters[0].source"]);
    expect(checked[0]?.summary).toMatch(/^14\.\d GiB \(safetensors BF16, 7\.62B parameters\)$/);
    expect(checked[0]?.bytes).toBe(7_615_616_512 * 2);
    expect(checked[1]?.summary).toMatch(/GiB \(GGUF Q4_K_M, 8\.03B parameters\)$/);
    expect(checked[2]?.summary).toBe("PEFT LoRA, rank 8");
  });

  it("refuses a 404, naming the exact source and the file that is missing", async () => {
    await expect(checkEntrySources(entry([{ engine: "vllm", source: at("qwen2.5-7b-typo/") }]), {})).rejects.toMatchObject({
      code: "source_unreadable",
      details: [{ where: "m.profiles[0].source", message: expect.stringMatching(/config\.json of .*qwen2\.5-7b-typo\/.*not found/) }],
      hint: expect.stringContaining("--no-source-check"),
    });
  });

  it("refuses a folder without weights, and a GGUF that is an adapter rather than a model", async () => {
    const failure = checkEntrySources(entry([{ engine: "vllm", source: join(workspace, "readme-only") }, { engine: "llamacpp", source: at("gguf/sql-lora.gguf") }]), {});
    await expect(failure).rejects.toMatchObject({ message: expect.stringContaining("2 sources do not answer as models") });
    const error = (await failure.catch((caught: unknown) => caught)) as { details: { where: string; message: string }[] };
    expect(error.details[0]?.message).toContain("config.json");
    expect(error.details[1]).toMatchObject({ where: "m.profiles[1].source", message: expect.stringContaining("is a GGUF lora adapter, not a model") });
  });

  it("says when a host does not answer within the deadline, or refuses the connection, or does not resolve", async () => {
    const timedOut = checkEntrySources(entry([{ engine: "vllm", source: `${silentUrl}/qwen/` }]), { requestTimeoutMs: 300 });
    await expect(timedOut).rejects.toMatchObject({ details: [{ message: expect.stringContaining("no answer within 0.3 s") }] });
    const closedPort = `http://127.0.0.1:${(silent.address() as AddressInfo).port + 1}`;
    await expect(checkEntrySources(entry([{ engine: "vllm", source: `${closedPort}/qwen/` }]), {})).rejects.toMatchObject({
      details: [{ message: expect.stringMatching(/connection refused|could not connect/) }],
    });
    await expect(checkEntrySources(entry([{ engine: "vllm", source: "https://mirror.llmgw-test.invalid/qwen/" }]), { requestTimeoutMs: 5_000 })).rejects.toMatchObject({
      details: [{ message: expect.stringMatching(/does not resolve|no answer within/) }],
    });
  });

  it("gives a GGUF URL that cannot be reached a hint about reaching it, not about the file's bytes", async () => {
    const closedPort = `http://127.0.0.1:${(silent.address() as AddressInfo).port + 1}`;
    for (const source of [`${closedPort}/none.gguf`, "http://127.0.0.1:9/none.gguf"]) {
      const error = (await checkEntrySources(entry([{ engine: "llamacpp", source }]), {}).catch((caught: unknown) => caught)) as { details: { message: string }[] };
      expect(error.details).toHaveLength(1);
      expect(error.details[0]?.message).toMatch(/connection refused|could not connect/);
      expect(error.details[0]?.message).toMatch(/reach|listen/i);
      expect(error.details[0]?.message).not.toContain("magic bytes");
    }
  });

  it("keeps the GGUF hint for a file that answers but is not a GGUF", async () => {
    const error = (await checkEntrySources(entry([{ engine: "llamacpp", source: at("gguf/error-page.gguf") }]), {}).catch((caught: unknown) => caught)) as { details: { message: string }[] };
    expect(error.details[0]?.message).toContain("magic bytes");
  });

  it("does not read ComfyUI profiles or external models, which have no model folder", async () => {
    expect(await checkEntrySources({ name: "img", profiles: [{ engine: "comfyui", source: "mirror:flux/" }] }, {})).toEqual([]);
    expect(await checkEntrySources({ name: "gpt", external: { base_url: "https://api.example/v1" } }, {})).toEqual([]);
  });
});
