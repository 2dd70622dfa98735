import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPresets } from "../../src/catalog/presets/load-presets.js";
import { shippedPresetsFolder } from "../../src/catalog/presets/shipped-presets.js";
import type { ModelView, PresetView, ReplicaView } from "../../src/protocol/views.js";
import { startDemoProcess, stopDemo, type DemoProcess } from "../support/demo-process.js";
import { runCli, type CliResult } from "../support/processes.js";

describe("presets in the demo, through llmgw ctl", () => {
  let demo: DemoProcess;
  const shipped = loadPresets(shippedPresetsFolder).map((preset) => preset.name);
  const run = (...args: string[]): Promise<CliResult> => runCli(["ctl", "--server", demo.url, "--token", demo.token, ...args]);
  const ctl = async (...args: string[]) => {
    const result = await run(...args);
    if (result.code !== 0) throw new Error(`ctl ${args.join(" ")} failed: ${result.stderr}`);
    return result.stdout;
  };

  beforeAll(async () => {
    demo = await startDemoProcess();
  }, 150_000);

  afterAll(() => stopDemo(demo), 40_000);

  it("lists every shipped preset with its licence, what each profile needs, and where the live fleet would run it", async () => {
    const { presets } = JSON.parse(await ctl("model", "presets", "--json")) as { presets: PresetView[] };
    expect(presets.map((preset) => preset.name)).toEqual(shipped);
    for (const preset of presets) {
      expect(preset.licence.url, preset.name).toMatch(/^https:\/\//);
      // Read through the demo's stand-in hub: every source was planned.
      // ComfyUI's workflows and files are not the planner's to read.
      for (const profile of preset.profiles.filter((each) => each.engine !== "comfyui")) {
        expect(profile.unreadable, `${preset.name}/${profile.name}`).toBeNull();
        expect(profile.weights_bytes, `${preset.name}/${profile.name}`).toBeGreaterThan(0);
      }
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
  });

  it("adds a preset, whose replica the reconciler places, recorded in the model and the audit as coming from the preset", async () => {
    const added = JSON.parse(await ctl("model", "add", "qwen2.5-14b-instruct", "--json")) as ModelView;
    expect(added).toMatchObject({ name: "qwen2.5-14b-instruct", preset: "qwen2.5-14b-instruct", origin: "hf://Qwen/Qwen2.5-14B-Instruct", context: 32768 });
    expect(added.profiles.map((profile) => profile.name)).toEqual(["gpu", "cpu"]);
    const deadline = Date.now() + 90_000;
    let ready: ReplicaView[] = [];
    while (ready.length === 0 && Date.now() < deadline) {
      ready = (JSON.parse(await ctl("replicas", "--model", "qwen2.5-14b-instruct", "--json")) as { replicas: ReplicaView[] }).replicas.filter((replica) => replica.state === "ready");
      if (ready.length === 0) await new Promise((resolve) => setTimeout(resolve, 500));
    }
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
