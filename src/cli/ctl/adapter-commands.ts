import { admin } from "../../client/index.js";
import { InvalidArgumentError, type Command } from "commander";
import { parseDuration } from "../../catalog/light.js";
import { DomainError } from "../../errors/light.js";
import type { AdapterChangeView, AdaptersView } from "../../protocol/index.js";
import { print, printJson, renderTable } from "../output.js";
import { duration } from "../parse-option.js";
import { apiClient, ctlOptions } from "./context.js";
import { waitForModel } from "./wait-for-model.js";

/**
 * NAME=SOURCE[@SCALE]. A source may hold @ itself (hf://org/name@rev), so only
 * a last @ followed by a decimal number is a scale.
 */
export function parseAdapterOption(text: string): { name: string; source: string; scale?: number } {
  const equals = text.indexOf("=");
  if (equals <= 0 || equals === text.length - 1) {
    throw new InvalidArgumentError(`"${text}" is not NAME=SOURCE[@SCALE], such as qwen-sql=hf://org/qwen-sql-lora or legal=/models/legal.gguf@0.8`);
  }
  const name = text.slice(0, equals);
  const rest = text.slice(equals + 1);
  const scaled = /^(.+)@(\d+(?:\.\d+)?)$/.exec(rest);
  if (scaled === null) return { name, source: rest };
  const scale = Number(scaled[2]);
  if (!(scale > 0)) throw new InvalidArgumentError(`scale @${scaled[2]} must be greater than 0`);
  return { name, source: scaled[1] as string, scale };
}

function adapterTable(view: AdaptersView): string {
  if (view.adapters.length === 0) return `${view.model} has no adapters.`;
  return renderTable(
    ["ADAPTER", "SOURCE", "SCALE"],
    view.adapters.map((adapter) => [adapter.name, adapter.source, adapter.scale === null ? "-" : String(adapter.scale)]),
  );
}

function describeChange(view: AdapterChangeView): string {
  const verb = view.change === "added" ? "Added" : "Removed";
  const how =
    view.applied === "runtime"
      ? `${view.change === "added" ? "loaded into" : "unloaded from"} ${view.replicas_changed.length} running replica(s) without a restart`
      : view.applied === "restart"
        ? `its engine takes adapters only at start: a restart is needed, and ${view.replicas} replica(s) are replaced ${view.in_place ? "in place" : "by surge (each new one ready before the old one stops)"}`
        : "no replica runs; the next ones start with it";
  return [`${verb} adapter ${view.adapter} ${view.change === "added" ? "to" : "from"} ${view.model}: ${how}.`, ...view.warnings.map((warning) => `warning: ${warning}`), adapterTable(view)].join("\n");
}

/** `ctl model adapters M [--add NAME=SOURCE[@SCALE]] [--remove NAME]`. */
export function registerAdapterCommands(ctl: Command): void {
  const model = ctl.commands.find((command) => command.name() === "model") ?? ctl.command("model");
  model
    .command("adapters")
    .argument("<model>", "model name")
    .description("list a model's LoRA adapters, or add or remove one (checked first; loaded without a restart where the engine allows)")
    .option("--add <NAME=SOURCE[@SCALE]>", "add an adapter: a GGUF LoRA for llama.cpp (SCALE for llama.cpp only), a PEFT folder or HF id for vLLM and SGLang", parseAdapterOption)
    .option("--remove <name>", "remove an adapter")
    .option("--in-place", "when a restart is needed: stop each replica before its replacement starts")
    .option("--wait", "when a restart is needed: wait until every replica is replaced and ready")
    .option("--timeout <duration>", "with --wait: give up after this long (default 30m)", duration)
    .option("--json", "print the API's answer")
    .action(async (name: string, options: { add?: { name: string; source: string; scale?: number }; remove?: string; inPlace?: boolean; wait?: boolean; timeout?: string }, command: Command) => {
      const client = apiClient(ctlOptions(command));
      if (options.add !== undefined && options.remove !== undefined) {
        throw new DomainError("invalid_input", "--add and --remove in one command", "Give one change at a time: add, then remove (or the other way round).");
      }
      if (options.add === undefined && options.remove === undefined) {
        const view = await client.send(admin.adapters(name));
        return ctlOptions(command).json ? printJson(view) : print(adapterTable(view));
      }
      const view =
        options.add !== undefined
          ? await client.send(admin.addAdapter(name, { ...options.add, in_place: options.inPlace === true }))
          : await client.send(admin.removeAdapter(name, options.remove as string, options.inPlace === true));
      if (ctlOptions(command).json && !options.wait) return printJson(view);
      print(describeChange(view));
      if (options.wait && view.restart_before !== null) {
        await waitForModel(client, view.model, { since: view.restart_before, timeoutMs: parseDuration(options.timeout ?? "30m") ?? 1_800_000 });
      }
    });
}
