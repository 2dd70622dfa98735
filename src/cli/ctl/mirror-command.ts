import type { Command } from "commander";
import { print, printJson } from "../output.js";
import { ctlOptions } from "./context.js";

interface MirrorPullOptions {
  to: string;
  profile?: string[];
  hubEndpoint?: string;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * `ctl mirror pull`: run on a machine that reaches the hub, with no server
 * (such a machine seldom has one), reading the hub with the same readers as
 * the server. It writes a folder to carry into the air-gapped network; a
 * server there with `mirror:` at that folder (or at an HTTP server
 * publishing it) adds the presets from it without asking the hub.
 * A group of its own rather than an option of `ctl model pull`, which asks a
 * running server to fetch a catalog model onto its nodes.
 */
export function registerMirrorCommands(ctl: Command): void {
  const mirror = ctl.command("mirror").description("write a mirror folder on a machine with internet, for servers that cannot reach the hub");
  mirror
    .command("pull")
    .argument("<preset-or-source...>", "shipped presets by name (`llmgw ctl model presets` lists them) or hub sources (hf://org/name[@revision][/file])")
    .requiredOption("--to <dir>", "the mirror folder to write (created if missing; what is already whole there is kept)")
    .option("--profile <name>", "of a preset, only this profile's files (repeatable; default: every profile)", collect)
    .option("--hub-endpoint <url>", "where hub sources are read (env HF_ENDPOINT; default the Hugging Face Hub); a gated repository needs HF_TOKEN")
    .option("--json", "print the mirror's manifest")
    .description(
      "copy every file a preset or hub source needs into a mirror folder, laid out as server.yaml's `mirror:` reads it (hf/ORG/NAME/REVISION/…), with FILE.sha256 beside each file and llmgw-mirror.json listing what it holds; runs here, without a server",
    )
    .action(async (names: string[], options: MirrorPullOptions, command: Command) => {
      // Loaded when run: every `llmgw ctl` builds this command tree, and must not load the presets' schema, the hub
      // readers or the agent's file selection to do it.
      const [{ presetSources, pullToMirror }, { shippedPresets }, { mirrorKey, defaultHubEndpoint }] = await Promise.all([
        import("./mirror-pull.js"),
        import("../../catalog/index.js"),
        import("../../plan/index.js"),
      ]);
      const presets = shippedPresets();
      const sources = [
        ...new Set(
          names.flatMap((name) => {
            const preset = presets.find((candidate) => candidate.name === name);
            return preset ? presetSources(preset, options.profile ?? []) : [name];
          }),
        ),
      ];
      const json = ctlOptions(command).json === true;
      const manifest = await pullToMirror(sources, {
        to: options.to,
        hubEndpoint: options.hubEndpoint ?? process.env.HF_ENDPOINT ?? defaultHubEndpoint,
        hubToken: process.env.HF_TOKEN,
        progress: json ? undefined : print,
      });
      if (json) return printJson(manifest);
      print("");
      print(`The mirror in ${options.to} holds, as mirror:PATH sources:`);
      for (const source of sources) {
        const entry = manifest.sources[mirrorKey(source) ?? ""];
        if (entry) print(`  ${source}  →  ${entry.mirror_source}`);
      }
      print("");
      print("Carry the folder to the air-gapped network and set `mirror:` in server.yaml to it (a folder every node mounts at the same path, or its URL");
      print("on an HTTP server): `llmgw ctl model add PRESET` then reads the preset's files from the mirror, and the hub is never asked.");
    });
}
