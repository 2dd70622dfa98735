import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import OpenAI, { APIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPresets } from "../../src/catalog/presets/load-presets.js";
import type { Preset } from "../../src/catalog/presets/preset-schema.js";
import { shippedPresetsFolder } from "../../src/catalog/presets/shipped-presets.js";
import type { ModelView, PresetView, ReplicaView } from "../../src/protocol/views.js";
import { startDemoProcess, stopDemo, type DemoProcess } from "../support/demo-process.js";
import { waitFor } from "../support/fake-engine.js";
import { runCli, type CliResult } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

describe("presets in the demo, through llmgw ctl", () => {
  let demo: DemoProcess;
  const presetFiles = loadPresets(shippedPresetsFolder);
  const shipped = presetFiles.map((preset) => preset.name);
  const isComfy = (preset: Preset) => (preset.model.profiles ?? []).some((profile) => profile.engine === "comfyui");
  /** A preset no node of the demo holds (its cards are too small for one node, and it has no two nodes of eight): it says why, and is not added. */
  const beyondTheDemo = (name: string) => name === "deepseek-v3";
  const client = () => new OpenAI({ baseURL: `${demo.url}/v1`, apiKey: "unused-on-the-demo's-open-gateway", maxRetries: 0, timeout: 60_000 });
  const replicasOf = async (model: string) => (JSON.parse(await ctl("replicas", "--model", model, "--json")) as { replicas: ReplicaView[] }).replicas;
  /** Polls what `ctl` and /metrics say every half second: each poll starts a process. */
  const until = async <T>(what: string, check: () => Promise<T | undefined>, withinMs = 90_000): Promise<T> => await waitFor(check, withinMs, what, 500);
  /** A model's replica ready, and the demo's gateway routing to it (the routing table follows the fleet within a second). */
  const readyAndRouted = async (model: string) => {
    const ready = await until(`${model} ready`, async () => (await replicasOf(model)).find((replica) => replica.state === "ready"));
    await until(`${model} in the gateway's routing table`, async () =>
      new RegExp(`llmgw_gateway_replicas\\{model="${model.replace(/\./g, "\\.")}",state="ready"\\} 1\\b`).test(await (await fetch(`${demo.url}/metrics`)).text()) ? true : undefined,
    );
    return ready;
  };
  /** Asks a model for its preset's task through the openai client, and says what came back. */
  const answerTask = async (model: string, task: string): Promise<string> => {
    const openai = client();
    if (task === "chat") return (await openai.chat.completions.create({ model, messages: [{ role: "user", content: "Say hello." }], max_tokens: 4 })).choices[0]?.message.content ?? "";
    if (task === "completions") return (await openai.completions.create({ model, prompt: "Once upon a time", max_tokens: 4 })).choices[0]?.text ?? "";
    if (task === "embeddings") return `${(await openai.embeddings.create({ model, input: "a sentence to embed" })).data[0]?.embedding.length ?? 0} dimensions`;
    if (task === "rerank") {
      // The official client has no rerank method: its post() sends the body as it is, to the gateway's /v1/rerank.
      const documents = ["Bread needs flour, water and salt.", "The giant panda is a bear native to China."];
      const ranked = await openai.post<{ results: { index: number; relevance_score: number }[] }>("/rerank", { body: { model, query: "What is a giant panda?", documents } });
      return documents[ranked.results[0]?.index ?? -1] ?? "";
    }
    throw new Error(`no check for task ${task}`);
  };
  const run = (...args: string[]): Promise<CliResult> => runCli(["ctl", "--server", demo.url, "--token", demo.token, ...args]);
  const ctl = async (...args: string[]) => {
    const result = await run(...args);
    if (result.code !== 0) throw new Error(`ctl ${args.join(" ")} failed: ${result.stderr}`);
    return result.stdout;
  };

  beforeAll(async () => {
    demo = await startDemoProcess();
  }, 150_000);

  // The demo stops every replica it holds before it removes its folder; with the presets added here that takes longer than its first four.
  afterAll(() => stopDemo(demo, 60_000), 70_000);

  it("lists every shipped preset with its licence, what each profile needs, and where the live fleet would run it", async () => {
    const { presets } = JSON.parse(await ctl("model", "presets", "--json")) as { presets: PresetView[] };
    expect(presets.map((preset) => preset.name)).toEqual(shipped);
    for (const preset of presets) {
      expect(preset.licence.url, preset.name).toMatch(/^https:\/\//);
      // Read through the demo's stand-in hub: every source was planned, every ComfyUI file sized.
      for (const profile of preset.profiles) {
        expect(profile.unreadable, `${preset.name}/${profile.name}`).toBeNull();
        expect(profile.weights_bytes, `${preset.name}/${profile.name}`).toBeGreaterThan(0);
      }
      if (beyondTheDemo(preset.name)) {
        expect(preset.runs_on, preset.name).toBeNull();
        expect(preset.why_not, preset.name).toContain("profile two-nodes: 0/2 fabrics: nvl0 has 0 nodes with 8 free cards of the 2 needed");
        continue;
      }
      // The demo's fleet runs every other preset (the 70B on its free cards, as the first listing is made before anything else is added).
      expect([preset.name, preset.why_not]).toEqual([preset.name, null]);
      expect(preset.runs_on, preset.name).not.toBeNull();
    }
    const embedding = presets.find((preset) => preset.name === "qwen3-embedding-0.6b") as PresetView;
    expect(embedding.added_as).toEqual(["qwen3-embedding-0.6b"]);
    // Nothing of the demo's runs on the 14B's card yet: it fits, on a card placement picks.
    const larger = presets.find((preset) => preset.name === "qwen2.5-14b-instruct") as PresetView;
    expect(larger.runs_on).toMatchObject({ profile: "gpu", cards: [expect.any(Number)] });
    expect(larger.why_not).toBeNull();

    const table = await ctl("model", "presets");
    expect(table).toMatch(/^NAME\s+TASKS\s+SIZE\s+NEEDS\s+LICENCE\s+FITS/);
    expect(table).toMatch(/qwen2\.5-14b-instruct\s+chat\s+27\.5 GiB \/ 8\.4 GiB\s+gpu: 1 card × \d+\.\d GiB; cpu: 24\.0 GiB, 16 cores\s+Apache-2\.0\s+yes on gpu-node-\d \(1× (H100|L40S)\)/);
    expect(table).toContain("qwen3-embedding-0.6b: in the catalog as qwen3-embedding-0.6b");
    // A ComfyUI preset's size is its workflow's files as the hub publishes them (17.2 GB; 4.93 GB), all on its one card.
    expect(table).toMatch(/flux1-schnell\s+images\s+16\.0 GiB\s+gpu: 1 card × 16\.0 GiB\s+Apache-2\.0\s+yes on gpu-node-\d \(1× (H100|L40S)\)/);
    expect(table).toMatch(/hunyuan3d-2\s+image-to-3d\s+4\.6 GiB\s+gpu: 1 card × 4\.6 GiB\s+Tencent Hunyuan 3D 2\.0 Community License\s+yes on gpu-node-\d/);
    for (const name of shipped.filter((each) => !beyondTheDemo(each))) expect(table).toMatch(new RegExp(`^${name.replace(/\./g, "\\.")}\\s.*\\d GiB.*yes on gpu-node-\\d`, "m"));
  });

  // Before anything else is added, so each finds the demo's free cards; each is removed once it answered.
  it.each(
    loadPresets(shippedPresetsFolder)
      .filter((preset) => !(preset.model.profiles ?? []).some((profile) => profile.engine === "comfyui") && !beyondTheDemo(preset.name))
      .map((preset) => [preset.name, preset] as const),
  )("`ctl model serve` of %s's source picks a fitting candidate, and the model answers its task", async (name, preset) => {
    const source = preset.model.profiles?.[0]?.source as string;
    const served = `served-${name.replace(/\./g, "-")}`;
    const output = await ctl("model", "serve", source, "--name", served, "--wait", "--timeout", "2m");
    expect(output).toMatch(/^Best fit: \S+ \S+ on (\d+ (h100|l40s) cards? \(\S+\)|a CPU host .*), context up to /m);
    expect(output).toContain(`Added ${served}.`);
    expect(output).toContain(`model": "${served}"`);
    const replica = await readyAndRouted(served);
    expect(replica.node).toMatch(/^gpu-node-\d$/);
    const task = preset.preset.tasks[0] as string;
    expect(await answerTask(served, task)).not.toBe("");
    await ctl("model", "remove", served);
    await until(`${served}'s replicas gone`, async () => ((await replicasOf(served)).every((each) => each.state === "stopped" || each.state === "failed") ? true : undefined), 60_000);
  }, 180_000);

  it("refuses `ctl model serve` of a ComfyUI preset's repository, saying to add the preset", async () => {
    for (const [source, preset] of [["Comfy-Org/flux1-schnell", "flux1-schnell"], ["hf://tencent/Hunyuan3D-2@main", "hunyuan3d-2"]] as const) {
      const refused = await run("model", "serve", source);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`${source} is the ComfyUI preset ${preset}'s model: a workflow and the files it loads, not one checkpoint to plan; nothing was added`);
      expect(refused.stderr).toContain(`llmgw ctl model add ${preset}`);
    }
    const models = (JSON.parse(await ctl("models", "--json")) as { models: ModelView[] }).models.map((model) => model.name);
    expect(models).not.toContain("flux1-schnell");
  });

  it("adds a preset, whose replica the reconciler places, recorded in the model and the audit as coming from the preset", async () => {
    const added = JSON.parse(await ctl("model", "add", "qwen2.5-14b-instruct", "--json")) as ModelView;
    expect(added).toMatchObject({ name: "qwen2.5-14b-instruct", preset: "qwen2.5-14b-instruct", origin: "hf://Qwen/Qwen2.5-14B-Instruct", context: 32768 });
    expect(added.profiles.map((profile) => profile.name)).toEqual(["gpu", "cpu"]);
    const ready = await until("a ready replica of qwen2.5-14b-instruct", async () => {
      const found = (await replicasOf("qwen2.5-14b-instruct")).filter((replica) => replica.state === "ready");
      return found.length > 0 ? found : undefined;
    });
    expect(ready.map((replica) => [replica.profile, replica.gpus.length])).toEqual([["gpu", 1]]);
    const audit = await ctl("audit", "--model", "qwen2.5-14b-instruct");
    expect(audit).toMatch(/model-added\s+qwen2\.5-14b-instruct\s+added from preset qwen2\.5-14b-instruct/);
  }, 120_000);

  it("adds a preset under another name with --name, and refuses the same name twice, saying to use --name", async () => {
    const output = await ctl("model", "add", "qwen3-embedding-0.6b", "--name", "embed-2");
    expect(output).toContain("Added embed-2 from preset qwen3-embedding-0.6b.");
    expect(output).toMatch(/preset\s+qwen3-embedding-0\.6b \(shipped with llmgw/);
    const shown = JSON.parse(await ctl("model", "show", "embed-2", "--json")) as ModelView;
    expect(shown.preset).toBe("qwen3-embedding-0.6b");
    expect(await ctl("audit", "--model", "embed-2")).toContain("added from preset qwen3-embedding-0.6b");

    const twice = await run("model", "add", "qwen3-embedding-0.6b", "--name", "embed-2");
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('cannot add preset qwen3-embedding-0.6b as "embed-2"');
    expect(twice.stderr).toContain("llmgw ctl model add qwen3-embedding-0.6b --name NAME");
    const { presets } = JSON.parse(await ctl("model", "presets", "--json")) as { presets: PresetView[] };
    expect(presets.find((preset) => preset.name === "qwen3-embedding-0.6b")?.added_as.sort()).toEqual(["embed-2", "qwen3-embedding-0.6b"]);
  });

  it("adds flux1-schnell, whose replica ComfyUI runs on a card, and generates a PNG through the demo's /v1 with the openai client", async () => {
    const added = await ctl("model", "add", "flux1-schnell");
    expect(added).toContain("Added flux1-schnell from preset flux1-schnell.");
    expect(added).toMatch(/profiles\[0\]\.comfy\.files\[0\]\.source\s+hf:\/\/Comfy-Org\/flux1-schnell@main\/flux1-schnell-fp8\.safetensors\s+16\.0 GiB \(for models\/checkpoints\/\)/);
    const replica = await readyAndRouted("flux1-schnell");
    expect([replica.engine, replica.gpus.length]).toEqual(["comfyui", 1]);
    const image = await client().images.generate({ model: "flux1-schnell", prompt: "a red fox in the snow", size: "256x128", response_format: "b64_json" });
    const png = Buffer.from(image.data?.[0]?.b64_json ?? "", "base64");
    expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([256, 128]);
  }, 120_000);

  it("adds hunyuan3d-2, and the demo's printed curl line, pasted as printed in any folder, turns its image into a mesh through /v1/llmgw/comfy", async () => {
    const added = await ctl("model", "add", "hunyuan3d-2");
    expect(added).toContain("Added hunyuan3d-2 from preset hunyuan3d-2.");
    expect(added).toContain("4.6 GiB (for models/checkpoints/)");
    const replica = await readyAndRouted("hunyuan3d-2");
    expect([replica.engine, replica.gpus.length]).toEqual(["comfyui", 1]);

    // The line as the demo printed it: an image it wrote, and the mesh written beside it, both absolute.
    const line = demo.output().split("\n").map((each) => each.trim()).find((each) => each.startsWith("curl ") && each.includes("/v1/llmgw/comfy/")) ?? "";
    const [, image = "", endpoint, meshFile = ""] = /^curl -s -F image=@(\/\S+) (\S+) -o (\/\S+)$/.exec(line) ?? [];
    expect(endpoint, line).toBe(`${demo.url}/v1/llmgw/comfy/hunyuan3d-2`);
    const png = readFileSync(image);
    expect([png.subarray(0, 8).toString("hex"), png.subarray(12, 16).toString("latin1")]).toEqual(["89504e470d0a1a0a", "IHDR"]);

    // The gateway answers the printed image with a mesh, as a mesh.
    const form = new FormData();
    form.set("image", new Blob([png], { type: "image/png" }), path.basename(image));
    const answer = await fetch(endpoint as string, { method: "POST", body: form });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("model/gltf-binary");

    // Pasted into a shell whose folder is not the demo's.
    await promisify(execFile)("sh", ["-c", line], { cwd: temporaryDirectory("llmgw-pasted-"), timeout: 60_000 });
    const glb = readFileSync(meshFile);
    // glTF binary: the magic "glTF", version 2, and the whole file's length in the header.
    expect([glb.subarray(0, 4).toString("latin1"), glb.readUInt32LE(4), glb.readUInt32LE(8)]).toEqual(["glTF", 2, glb.length]);
  }, 120_000);

  it("has every shipped preset in the catalog, each answering its task", async () => {
    for (const preset of presetFiles.filter((each) => !isComfy(each) && !beyondTheDemo(each.name))) {
      const models = (JSON.parse(await ctl("models", "--json")) as { models: ModelView[] }).models;
      if (!models.some((model) => model.name === preset.name)) await ctl("model", "add", preset.name);
    }
    const { presets } = JSON.parse(await ctl("model", "presets", "--json")) as { presets: PresetView[] };
    for (const preset of presets.filter((each) => !beyondTheDemo(each.name))) expect(preset.added_as, preset.name).toContain(preset.name);
    const onDemand = presetFiles.filter((each) => !isComfy(each) && !beyondTheDemo(each.name) && each.model.scaling?.min === 0);
    expect(onDemand.map((preset) => preset.name)).toEqual(["llama-3.3-70b-instruct"]);
    for (const preset of presetFiles.filter((each) => !isComfy(each) && !beyondTheDemo(each.name) && !onDemand.includes(each))) {
      expect(await answerTask(preset.name, preset.preset.tasks[0] as string), preset.name).not.toBe("");
    }
    // The reranker puts the document that answers the query first, and is refused chat (it runs with --runner pooling), naming what it serves.
    expect(await answerTask("qwen3-reranker-0.6b", "rerank")).toBe("The giant panda is a bear native to China.");
    const chat = await client().chat.completions.create({ model: "qwen3-reranker-0.6b", messages: [{ role: "user", content: "Say hello." }] }).catch((error: unknown) => error);
    expect(chat).toBeInstanceOf(APIError);
    expect({ status: (chat as APIError).status, code: (chat as APIError).code }).toEqual({ status: 400, code: "wrong_model_task" });
    expect((chat as APIError).message).toContain("its engine runs with --runner pooling): it serves /v1/embeddings, /v1/rerank or /v1/score, not POST /v1/chat/completions");
    // The 70B is on demand and takes two H100s or four L40S, which the models added above now hold:
    // removed, their cards are free, and the 70B's first request starts it and waits for it.
    const onCards = ["flux1-schnell", "hunyuan3d-2", "qwen2.5-14b-instruct", "qwen3-reranker-0.6b"];
    for (const name of onCards) await ctl("model", "remove", name);
    for (const name of onCards) {
      await until(`${name}'s replicas gone`, async () => ((await replicasOf(name)).every((each) => each.state === "stopped" || each.state === "failed") ? true : undefined), 60_000);
    }
    for (const preset of onDemand) expect(await answerTask(preset.name, preset.preset.tasks[0] as string), preset.name).not.toBe("");
    expect((await replicasOf("llama-3.3-70b-instruct")).filter((replica) => replica.state === "ready")).toHaveLength(1);
  }, 240_000);

  it("refuses an unknown preset, listing the known ones", async () => {
    const unknown = await run("model", "add", "qwen-9000");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`no preset named "qwen-9000"; the presets are: ${shipped.join(", ")}`);
    expect(unknown.stderr).toContain("llmgw ctl model presets");
  });

  it("refuses `model add` with neither a preset nor a file, with both, and --name with a file", async () => {
    const neither = await run("model", "add");
    expect([neither.code, neither.stderr]).toEqual([1, expect.stringContaining("no model was given to add")]);
    const both = await run("model", "add", "qwen2.5-7b-instruct", "-f", "model.yaml");
    expect([both.code, both.stderr]).toEqual([1, expect.stringContaining("both a preset (qwen2.5-7b-instruct) and a file (-f model.yaml) were given")]);
    const renamedFile = await run("model", "add", "-f", "model.yaml", "--name", "other");
    expect([renamedFile.code, renamedFile.stderr]).toEqual([1, expect.stringContaining("--name renames a preset")]);
  });
});
